package ctl

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

// TestLayout: idemctl layout says which key layout the prefix holds, and
// where previouslayout's window stands: none, open until the end its
// processes recorded, ended by hand, over.
func TestLayout(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		expect := func(stage string, want ...string) {
			t.Helper()
			code, out, errOut := b.run(t, "layout")
			if code != ExitOK {
				t.Fatalf("%s: exit %d, stderr %s", stage, code, errOut)
			}
			for _, w := range want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("%s: output lacks %q:\n%s", stage, w, out)
				}
			}
		}
		expect("empty", `layout +none yet: no record keys`, `marker .*key-layout-4 absent`, `window +none: nothing to upgrade`)

		// Records of the previous version.
		old := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix), redisstore.WithPreviousLayoutIgnored(), redisstore.WithLogger(nil))
		for _, k := range []string{"a", "b"} {
			if _, err := old.Acquire(ctx, idemstore.AcquireRequest{Key: previouslayout.PreviousRecordKey("shop", "CreateOrder", "", k), Token: "o", Fingerprint: "f"}); err != nil {
				t.Fatal(err)
			}
		}
		expect("before the upgrade", `layout +the previous one \(full names\): 0 record keys of the current layout, 2 of the previous \(all \d+ keys under prefix`,
			`window +not started: this server holds records of the previous layout; upgrade with previouslayout.New`)

		// The upgrade, as previouslayout starts it: the marker, the
		// retention its processes were given, a record of the current
		// layout.
		since := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		for k, v := range map[string]string{
			redisstore.KeyLayoutMarker:    strconv.FormatInt(since.UnixMilli(), 10),
			redisstore.KeyLayoutRetention: strconv.FormatInt((96 * time.Hour).Milliseconds(), 10),
		} {
			if err := b.rdb.Set(ctx, b.prefix+":"+k, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := old.Acquire(ctx, idemstore.AcquireRequest{Key: idemstore.RecordKeyIn("shop", "CreateOrder", "", "c"), Token: "n", Fingerprint: "f"}); err != nil {
			t.Fatal(err)
		}
		at := func(t time.Time) string { return regexp.QuoteMeta(t.UTC().Format(time.RFC3339)) }
		expect("in the rollout", `layout +both: .* 1 record keys of the current layout, 2 of the previous`,
			`marker .*key-layout-4: the first process running previouslayout used this server at `+at(since),
			`window +open until `+at(since.Add(120*time.Hour))+`, 11[89]h\d+m\d+s from now: build every store with previouslayout.New`,
			`rollout +until `+at(since.Add(24*time.Hour)))

		marker := b.prefix + ":" + redisstore.KeyLayoutMarker
		past := time.Now().Add(-200 * time.Hour)
		if err := b.rdb.Set(ctx, marker, strconv.FormatInt(past.UnixMilli(), 10), 0).Err(); err != nil {
			t.Fatal(err)
		}
		expect("after the window", `window +ended at `)
		if err := b.rdb.Set(ctx, marker, "0", 0).Err(); err != nil {
			t.Fatal(err)
		}
		expect("ended by hand", `marker .* is 0: the window was ended by hand`, `window +ended: redisstore.New serves this server`)
		if err := b.rdb.Set(ctx, marker, "soon", 0).Err(); err != nil {
			t.Fatal(err)
		}
		expect("malformed", `marker .* holds "soon", neither 0 nor a time`)
	})
}

package redisstore

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Records of format 1, byte for byte as the store wrote them before the
// compact record (acquire's SET NX and acquire.lua, and complete.lua
// with encodeResult), under the engine's fingerprint v1FP.
const (
	v1FP        = "9f86d081884c7d659a2feb15d0c69e3ec8d0a4a5c1e0b5f1f2d0d5d1b2c3a4f5"
	v1Body      = `{"id":"ord_5c1f0e9a7b3d2c41","status":"created"}`
	v1Completed = "C\n" + v1FP + "\n201 0 70\nContent-Type: application/json\nLocation: /orders/ord_5c1f0e9a7b3d2c41\n" + v1Body
	v1Owner     = "VGHJ4UXQ2NMDE7RWB3KLOPFA5S"
	v1Abandoned = 86_400_000
)

// v1InProgress is an in-progress record of format 1, owned by v1Owner.
func v1InProgress(fence string) string {
	return "I\n" + v1FP + "\n" + v1Owner + "\n" + fence + "\n86400000"
}

// TestRedisStoreReadsFormat1 is a retry across the upgrade to the compact
// record: records the previous version wrote are replayed, refused, waited
// for and taken over as that version would, inspected and forgotten, and a
// takeover writes the compact record.
func TestRedisStoreReadsFormat1(t *testing.T) {
	each := func(t *testing.T, fn func(t *testing.T, b *redisBackend)) {
		eachRedisBackend(t, fn)
		t.Run("script-only", func(t *testing.T) {
			eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
				b.scriptOnly = true
				fn(t, b)
			})
		})
	}
	ctx := context.Background()
	each(t, func(t *testing.T, b *redisBackend) {
		s := b.store()
		set := func(k, v string, ttl time.Duration) {
			t.Helper()
			if err := b.rdb.Set(ctx, b.key(k), v, ttl).Err(); err != nil {
				t.Fatal(err)
			}
		}

		// Completed: replayed, another fingerprint refused, the record untouched.
		set("done", v1Completed, 24*time.Hour)
		wantReplay(t, s, "done", v1FP, &idemstore.Record{
			Status: 201,
			Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/ord_5c1f0e9a7b3d2c41"}},
			Body:   []byte(v1Body),
		})
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "done", Token: "a", Fingerprint: v1FP[:63] + "0"}), idemstore.OutcomeMismatch, 0)
		if got := b.raw(t, "done"); got != v1Completed {
			t.Fatalf("format 1 record changed to %q", got)
		}
		info, err := s.Inspect(ctx, "done")
		want := RecordInfo{RedisKey: b.key("done"), State: StateCompleted, Format: 1, TTL: info.TTL, Status: 201,
			HeaderNames: []string{"Content-Type", "Location"}, BodySize: len(v1Body), body: []byte(v1Body)}
		if err != nil || !reflect.DeepEqual(info, want) || info.TTL <= 23*time.Hour {
			t.Errorf("inspect of a format 1 record: %+v, %v; want %+v", info, err, want)
		}

		// In progress under a live lease: a conflict; its owner is a process
		// of the version before, whose own scripts complete, extend or
		// release it, so this version's refuse to.
		set("running", v1InProgress("1"), time.Minute+v1Abandoned*time.Millisecond)
		acq := mustAcquire(t, s, idemstore.AcquireRequest{Key: "running", Token: "b", Fingerprint: v1FP})
		if acq.Outcome != idemstore.OutcomeConflict || acq.Remaining <= 50*time.Second || acq.Remaining > time.Minute {
			t.Errorf("acquire of a format 1 lease: %+v, want a conflict with just under 1m left", acq)
		}
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "running", Token: "b", Fingerprint: "other"}), idemstore.OutcomeMismatch, 0)
		wantNotOwner(t, "complete of a format 1 lease", s.Complete(ctx, "running", v1Owner, &idemstore.Record{Status: 200}, time.Hour))
		wantNotOwner(t, "extend of a format 1 lease", s.Extend(ctx, "running", v1Owner, time.Minute))
		wantNotOwner(t, "release of a format 1 lease", s.Release(ctx, "running", v1Owner))
		if got := b.raw(t, "running"); got != v1InProgress("1") {
			t.Fatalf("format 1 lease changed to %q", got)
		}
		if info, err := s.Inspect(ctx, "running"); err != nil || info.Format != 1 || info.State != StateInProgress || info.Fence != 1 || !info.Owner || info.LeaseRemaining <= 50*time.Second {
			t.Errorf("inspect of a format 1 lease: %+v, %v", info, err)
		}
		if err := s.Forget(ctx, "running", false); !errors.Is(err, ErrInProgress) {
			t.Errorf("forget of a format 1 lease, not forced: %v, want ErrInProgress", err)
		}

		// A lapsed lease: taken over with the next fence, as a compact
		// record, which this version completes and replays.
		set("dead", v1InProgress("4"), shortLease+v1Abandoned*time.Millisecond)
		b.waitPastDeadline(t, "dead")
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "dead", Token: "c", Fingerprint: v1FP}), idemstore.OutcomeRecovered, 5)
		if got, want := b.raw(t, "dead"), inProgressRecord(storedFingerprint(v1FP), "c", 5, s.abandonedMS); got != want {
			t.Errorf("record after the takeover %q, want %q", got, want)
		}
		rec := &idemstore.Record{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(v1Body)}
		mustComplete(t, s, "dead", "c", rec)
		wantReplay(t, s, "dead", v1FP, rec)

		if err := s.Forget(ctx, "done", false); err != nil {
			t.Errorf("forget of a format 1 record: %v", err)
		}
	})
}

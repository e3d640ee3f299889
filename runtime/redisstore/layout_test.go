package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// layoutReq is an acquire of a fresh key.
func layoutReq(key string) idemstore.AcquireRequest {
	return idemstore.AcquireRequest{Key: idemstore.RecordKeyIn("shop", "CreateOrder", "", key), Token: "t-" + key, Fingerprint: "f", Lease: time.Minute}
}

// setLayout writes the marker and, unless retention is zero, the retention
// of the window under prefix.
func setLayout(t *testing.T, rdb *redis.Client, prefix, marker string, retention time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.Set(ctx, prefix+":"+redisstore.KeyLayoutMarker, marker, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if retention != 0 {
		if err := rdb.Set(ctx, prefix+":"+redisstore.KeyLayoutRetention, strconv.FormatInt(retention.Milliseconds(), 10), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenWindowRefused: a store built without previouslayout on a server
// whose upgrade window is open refuses to serve it (an error matching
// ErrStoreMisconfigured from Acquire and Check) and names when the window
// ends: a day of rollout and the retention that previouslayout's processes
// recorded after the marker, or the default retention without one.
func TestOpenWindowRefused(t *testing.T) {
	rdb := redistest.Real(t)
	since := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for _, c := range []struct {
		name      string
		retention time.Duration // recorded, 0: none
		want      time.Time
	}{
		{"recorded retention", 96 * time.Hour, since.Add(120 * time.Hour)},
		{"estimated end", 0, since.Add(48 * time.Hour)},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			setLayout(t, rdb, prefix, strconv.FormatInt(since.UnixMilli(), 10), c.retention)
			store := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
			_, err := store.Acquire(context.Background(), layoutReq("k"))
			end := c.want.UTC().Format(time.RFC3339)
			if !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "until "+end) ||
				!strings.Contains(err.Error(), "previouslayout.New") || !strings.Contains(err.Error(), "WithPreviousLayoutIgnored") {
				t.Errorf("Acquire = %v; want misconfigured, naming the window's end %s and what to change", err, end)
			}
			if err := store.Check(context.Background()); !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), end) {
				t.Errorf("Check = %v; want the open window", err)
			}
			l, err := store.KeyLayout(context.Background())
			if err != nil || !l.Open() || !l.WindowEnd.Equal(c.want) || !l.Since.Equal(since) || l.Estimated != (c.retention == 0) {
				t.Errorf("KeyLayout = %+v, %v; want open since %v until %v", l, err, since, c.want)
			}
		})
	}
}

// TestWindowNotOpen: without a marker, with the marker at 0 (ended by
// hand), past the window's end, or with WithPreviousLayoutIgnored, the store
// serves.
func TestWindowNotOpen(t *testing.T) {
	rdb := redistest.Real(t)
	long := time.Now().Add(-100 * time.Hour)
	for _, c := range []struct {
		name      string
		marker    string
		retention time.Duration
		opts      []redisstore.Option
	}{
		{"no marker", "", 0, nil},
		{"marker 0", "0", 96 * time.Hour, nil},
		{"window over", strconv.FormatInt(long.UnixMilli(), 10), 48 * time.Hour, nil},
		{"estimated window over", strconv.FormatInt(long.UnixMilli(), 10), 0, nil},
		{"ignored", strconv.FormatInt(time.Now().UnixMilli(), 10), 0, []redisstore.Option{redisstore.WithPreviousLayoutIgnored()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			if c.marker != "" {
				setLayout(t, rdb, prefix, c.marker, c.retention)
			}
			store := redisstore.New(rdb, append([]redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)}, c.opts...)...)
			if acq, err := store.Acquire(context.Background(), layoutReq("k")); err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
				t.Errorf("Acquire = %+v, %v; want a first run", acq, err)
			}
		})
	}
}

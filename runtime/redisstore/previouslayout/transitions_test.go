package previouslayout_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestPreviousKeyTransitions: during the rollout and after it, a record
// created at the current key defers to a record at the previous key:
// replayed, refused (mismatch), answered 409 while its lease lives, taken
// over once it lapsed, with a fence above the lapsed owner's; the record
// created at the current key is released in every case but the takeover.
// During the rollout a new record is created under both keys and a
// takeover keeps both; after it, the previous key of a takeover is deleted
// and a new record has the current key alone. On real Redis.
func TestPreviousKeyTransitions(t *testing.T) {
	for _, mode := range []struct {
		name    string
		since   time.Duration // the marker's age
		rollout bool
	}{{"rollout", time.Minute, true}, {"after the rollout", previouslayout.Rollout + time.Minute, false}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			rdb, prefix := redistest.Keyspace(t)
			if err := rdb.Set(ctx, prefix+":"+previouslayout.KeyLayoutMarker, strconv.FormatInt(time.Now().Add(-mode.since).UnixMilli(), 10), 0).Err(); err != nil {
				t.Fatal(err)
			}
			const fp, fpBefore = "fp-with-api", "fp-before"
			prev := func(k string) string { return previouslayout.PreviousRecordKey("shop", "CreateOrder", "", k) }
			cur := func(k string) string { return idemstore.RecordKeyIn("shop", "CreateOrder", "", k) }
			// The previous version: its key, its fingerprint, its format.
			old := redisstore.New(rdb, append(previousVersion(prefix), redisstore.WithUnsizedRecords())...)
			oldAcquire := func(k, token string) idemstore.Acquisition {
				t.Helper()
				acq, err := old.Acquire(ctx, idemstore.AcquireRequest{Key: prev(k), Token: token, Fingerprint: fpBefore, Lease: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				return acq
			}
			rec := &idemstore.Record{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":1}`)}
			oldAcquire("done", "old-owner")
			if err := old.Complete(ctx, prev("done"), "old-owner", rec, time.Hour); err != nil {
				t.Fatal(err)
			}
			oldAcquire("busy", "old-owner")
			oldAcquire("lapsed", "old-owner")
			// The lease lapsed a second ago: the record outlives it by the
			// abandoned TTL (a day).
			if err := rdb.PExpire(ctx, prefix+":"+prev("lapsed"), idemstore.DefaultRetention-time.Second).Err(); err != nil {
				t.Fatal(err)
			}

			s := previouslayout.New(rdb, 0, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
			req := func(k, token, fp, before string) idemstore.AcquireRequest {
				return idemstore.AcquireRequest{Key: cur(k), Token: token, Fingerprint: fp, Lease: time.Minute,
					Origin: &idemstore.Origin{API: "shop", Operation: "CreateOrder", Key: k, Request: before}}
			}
			acquire := func(r idemstore.AcquireRequest) idemstore.Acquisition {
				t.Helper()
				acq, err := s.Acquire(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				return acq
			}
			exists := func(k string, want bool) {
				t.Helper()
				if n, err := rdb.Exists(ctx, prefix+":"+k).Result(); err != nil || (n == 1) != want {
					t.Errorf("%s: exists %d, %v; want %v", k, n, err, want)
				}
			}
			inspect := func(k string) redisstore.RecordInfo {
				t.Helper()
				info, err := s.Inspect(ctx, k)
				if err != nil {
					t.Fatalf("inspect %s: %v", k, err)
				}
				return info
			}

			if acq := acquire(req("done", "new-owner", fp, fpBefore)); acq.Outcome != idemstore.OutcomeReplay || !reflect.DeepEqual(acq.Record, rec) {
				t.Errorf("completed under the previous key: %+v %+v; want its replay", acq, acq.Record)
			}
			exists(cur("done"), false)
			if acq := acquire(req("done", "new-owner", "other", "other-before")); acq.Outcome != idemstore.OutcomeMismatch {
				t.Errorf("another payload under a key completed under the previous key: %+v; want mismatch", acq)
			}
			exists(cur("done"), false)

			if acq := acquire(req("busy", "new-owner", fp, fpBefore)); acq.Outcome != idemstore.OutcomeConflict || acq.Remaining <= 0 {
				t.Errorf("live lease under the previous key: %+v; want conflict", acq)
			}
			exists(cur("busy"), false)
			if err := old.Extend(ctx, prev("busy"), "old-owner", time.Minute); err != nil {
				t.Errorf("the previous owner lost its lease: %v", err)
			}

			// A takeover gets a fence above the lapsed owner's 1.
			if acq := acquire(req("lapsed", "new-owner", fp, fpBefore)); acq.Outcome != idemstore.OutcomeRecovered || acq.Fence != 2 {
				t.Errorf("lapsed lease under the previous key: %+v; want recovered, fence 2", acq)
			}
			if r := inspect(cur("lapsed")); r.State != redisstore.StateInProgress || r.Fence != 2 {
				t.Errorf("after the takeover, the current key holds %+v; want a lease of fence 2", r)
			}
			if mode.rollout {
				if r := inspect(prev("lapsed")); r.State != redisstore.StateInProgress || r.Fence != 2 || r.LeaseRemaining <= 0 {
					t.Errorf("after the takeover in the rollout, the previous key holds %+v; want the new lease, fence 2", r)
				}
			} else {
				exists(prev("lapsed"), false)
			}

			if acq := acquire(req("new", "new-owner", fp, fpBefore)); acq.Outcome != idemstore.OutcomeFirstRun || acq.Fence != 1 {
				t.Errorf("new key: %+v; want a first run, fence 1", acq)
			}
			exists(prev("new"), mode.rollout)
		})
	}
}

// TestRolloutPairsBothKeys: during the rollout, the owner of a record
// created under both keys completes both, each as its version reads it
// (the previous key with the fingerprint without the API identity and a
// record without the body's size), extends both and releases both; a
// record under either key is found by the other version's acquire. On real
// Redis.
func TestRolloutPairsBothKeys(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := redistest.Keyspace(t)
	s := previouslayout.New(rdb, 0, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
	old := redisstore.New(rdb, append(previousVersion(prefix), redisstore.WithUnsizedRecords())...)
	const fp, fpBefore = "fp-with-api", "fp-before"
	prev := func(k string) string { return previouslayout.PreviousRecordKey("shop", "CreateOrder", "", k) }
	cur := func(k string) string { return idemstore.RecordKeyIn("shop", "CreateOrder", "", k) }
	req := func(k, token string) idemstore.AcquireRequest {
		return idemstore.AcquireRequest{Key: cur(k), Token: token, Fingerprint: fp, Lease: time.Minute,
			Origin: &idemstore.Origin{API: "shop", Operation: "CreateOrder", Key: k, Request: fpBefore}}
	}
	oldReq := func(k, token string) idemstore.AcquireRequest {
		return idemstore.AcquireRequest{Key: prev(k), Token: token, Fingerprint: fpBefore, Lease: time.Minute}
	}
	must := func(acq idemstore.Acquisition, err error) idemstore.Acquisition {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return acq
	}
	if acq := must(s.Acquire(ctx, req("k", "owner"))); acq.Outcome != idemstore.OutcomeFirstRun || acq.Fence != 1 {
		t.Fatalf("first acquire: %+v", acq)
	}
	// The previous version sees the lease (a conflict) under its key.
	if acq := must(old.Acquire(ctx, oldReq("k", "old"))); acq.Outcome != idemstore.OutcomeConflict {
		t.Errorf("previous version's acquire: %+v; want conflict", acq)
	}
	if err := s.Extend(ctx, cur("k"), "owner", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, prefix+":"+prev("k")).Val(); ttl <= idemstore.DefaultRetention+time.Minute {
		t.Errorf("previous key not extended: PTTL %v", ttl)
	}
	rec := &idemstore.Record{Status: 201, Header: http.Header{}, Body: []byte(`{"id":1}`)}
	if err := s.Complete(ctx, cur("k"), "owner", rec, time.Hour); err != nil {
		t.Fatal(err)
	}
	for k, format := range map[string]int{cur("k"): 3, prev("k"): 2} {
		info, err := s.Inspect(ctx, k)
		if err != nil || info.State != redisstore.StateCompleted || info.Format != format || info.Status != 201 || string(info.Body()) != `{"id":1}` {
			t.Errorf("%s after completion: %+v, %v; want completed, format %d", k, info, err, format)
		}
	}
	// Replayed to both versions.
	if acq := must(old.Acquire(ctx, oldReq("k", "old"))); acq.Outcome != idemstore.OutcomeReplay || !reflect.DeepEqual(acq.Record, rec) {
		t.Errorf("previous version's retry: %+v; want replay", acq)
	}
	if acq := must(s.Acquire(ctx, req("k", "retry"))); acq.Outcome != idemstore.OutcomeReplay {
		t.Errorf("retry: %+v; want replay", acq)
	}

	must(s.Acquire(ctx, req("r", "owner2")))
	if err := s.Release(ctx, cur("r"), "owner2"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{cur("r"), prev("r")} {
		if n, _ := rdb.Exists(ctx, prefix+":"+k).Result(); n != 0 {
			t.Errorf("%s not released", k)
		}
	}
	// Neither lease is held any more: the tokens own nothing.
	if err := s.Extend(ctx, cur("k"), "owner", time.Minute); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("extend after completion: %v; want ErrNotOwner", err)
	}
}

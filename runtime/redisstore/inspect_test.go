package redisstore

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestInspectAndForget(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		s := b.store()
		k := idemstore.RecordKey("CreatePet", "tenant-1", "key-1")

		if _, err := s.Inspect(ctx, k); !errors.Is(err, ErrNoRecord) {
			t.Fatalf("Inspect of an absent key = %v, want ErrNoRecord", err)
		}
		if err := s.Forget(ctx, k, false); !errors.Is(err, ErrNoRecord) {
			t.Fatalf("Forget of an absent key = %v, want ErrNoRecord", err)
		}

		// In progress: shown with its fence and lease, refused unless forced.
		req := idemstore.AcquireRequest{Key: k, Token: "owner-1", Fingerprint: "fp", Lease: 30 * time.Second}
		wantOutcome(t, mustAcquire(t, s, req), idemstore.OutcomeFirstRun, 1)
		info, err := s.Inspect(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != StateInProgress || info.Fence != 1 || !info.Owner || info.RedisKey != b.key(k) ||
			info.LeaseRemaining <= 25*time.Second || info.LeaseRemaining > 30*time.Second ||
			info.Abandoned != idemop.DefaultRetention || info.TTL != info.LeaseRemaining+info.Abandoned {
			t.Errorf("in progress: %+v", info)
		}
		if age := info.Age(0, 30*time.Second); age < 0 || age > 5*time.Second {
			t.Errorf("in progress: age %v", age)
		}
		if err := s.Forget(ctx, k, false); !errors.Is(err, ErrInProgress) {
			t.Fatalf("Forget of an in-progress record = %v, want ErrInProgress", err)
		}
		if got := b.snapshot(t, k); got.state != stateInProgress || got.owner != "owner-1" {
			t.Fatalf("refused Forget changed the record: %+v", got)
		}
		if err := s.Forget(ctx, k, true); err != nil {
			t.Fatalf("forced Forget: %v", err)
		}
		// The stale owner can no longer complete; a retry runs again, as
		// ErrInProgress warns.
		wantNotOwner(t, "complete after a forced forget", s.Complete(ctx, k, "owner-1", &idemstore.Record{Status: 201}, time.Hour))
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: k, Token: "owner-2", Fingerprint: "fp"}), idemstore.OutcomeFirstRun, 1)

		// Completed: status, header names, body size and compression; the
		// body only through Body.
		body := []byte(`{"name":"` + strings.Repeat("rex ", 600) + `"}`)
		rec := &idemstore.Record{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/pets/1"}}, Body: body}
		if err := s.Complete(ctx, k, "owner-2", rec, time.Hour); err != nil {
			t.Fatal(err)
		}
		info, err = s.Inspect(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != StateCompleted || info.Status != 201 || !info.Compressed || info.BodyOmitted ||
			info.BodySize <= 0 || info.BodySize >= len(body) || info.TTL <= 59*time.Minute || info.TTL > time.Hour ||
			!slices.Equal(info.HeaderNames, []string{"Content-Type", "Location"}) || info.Fence != 0 || info.Owner {
			t.Errorf("completed: %+v", info)
		}
		if !slices.Equal(info.Body(), body) {
			t.Errorf("completed: Body() = %.40q..., want the stored body", info.Body())
		}
		if age := info.Age(time.Hour, 0); age < 0 || age > time.Minute {
			t.Errorf("completed: age %v", age)
		}
		if err := s.Forget(ctx, k, false); err != nil {
			t.Fatalf("Forget of a completed record: %v", err)
		}
		if _, err := s.Inspect(ctx, k); !errors.Is(err, ErrNoRecord) {
			t.Fatalf("Inspect after Forget = %v, want ErrNoRecord", err)
		}
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: k, Token: "owner-3", Fingerprint: "other"}), idemstore.OutcomeFirstRun, 1)
	})
}

func TestInspectLapsedLeaseAndNonRecord(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		s := b.store()
		k := idemstore.RecordKey("CreatePet", "", "lapsed")
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: k, Token: "owner", Fingerprint: "fp", Lease: 50 * time.Millisecond}), idemstore.OutcomeFirstRun, 1)
		b.waitPastDeadline(t, k)
		info, err := s.Inspect(ctx, k)
		if err != nil || info.State != StateInProgress || info.LeaseRemaining > 0 {
			t.Fatalf("lapsed lease: %+v, %v; want in progress with no lease left", info, err)
		}

		junk := idemstore.RecordKey("CreatePet", "", "junk")
		if err := b.rdb.Set(ctx, b.key(junk), "not a record", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Inspect(ctx, junk); !errors.Is(err, idemstore.ErrStoreUnavailable) || !strings.Contains(err.Error(), "not a record") {
			t.Errorf("Inspect of a non-record = %v", err)
		}
		if err := s.Forget(ctx, junk, false); err != nil { // a repair: it is no lease
			t.Errorf("Forget of a non-record = %v", err)
		}
	})
}

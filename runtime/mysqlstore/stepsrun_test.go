package mysqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestStepOfALostClaimIsRefused: a run whose claim the server ended (its
// transaction idle past the lease, as a frozen owner's) journals no step:
// the step's entry and its own write roll back, and the run that claimed
// the key since loads nothing of it.
func TestStepOfALostClaimIsRefused(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db)
	ctx := context.Background()
	req := idemstore.AcquireRequest{Key: "k", Token: "stale", Fingerprint: "fp", Lease: time.Second}
	acq, stale, err := s.AcquireRun(ctx, req)
	if err != nil || stale == nil {
		t.Fatalf("claim: %+v, %v", acq, err)
	}
	defer stale.Rollback(ctx)
	var newer idemstore.RunTx
	for newer == nil { // until the server has ended the stale claim (a second idle); the test's timeout bounds it
		req.Token = "newer"
		a, tx, err := s.AcquireRun(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if tx == nil && a.Outcome != idemstore.OutcomeConflict {
			t.Fatalf("while the stale claim may be open: %+v", a)
		}
		newer = tx
		if tx == nil {
			time.Sleep(100 * time.Millisecond) // polling the server's idle timeout, not synchronising goroutines
		}
	}
	defer newer.Rollback(ctx)
	st, err := s.BeginStep(ctx, "k", "stale", acq.Fence)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, "reserve", []byte(`"stale"`), time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("the stale run's step: %v, want ErrNotOwner", err)
	}
	if steps, err := s.LoadSteps(ctx, "k", "newer"); err != nil || len(steps) != 0 {
		t.Fatalf("the newer run loads %q, %v; want nothing", steps, err)
	}
}

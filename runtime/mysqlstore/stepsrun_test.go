package mysqlstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestStepsOfAClaimedRun: through the engine, a run (its key claimed in its
// transaction) journals a step whose row commits with its entry in the
// step's own transaction, then fails (500, not stored): the run rolls back,
// the step's row and entry stay. The retry loads the journal (by the key
// and the request's fingerprint, the claim's row being uncommitted) and
// does not run the step again; its second step runs once. One row per
// step, and the key replays.
func TestStepsOfAClaimedRun(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db)
	rows := mysqltest.Name(t) + "_rows"
	mysqltest.Exec(t, db, "CREATE TABLE `"+rows+"` (step VARCHAR(32) NOT NULL) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, db, rows) })
	var ran [2]atomic.Int64
	var attempts atomic.Int64
	step := func(i int, name string) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			ran[i].Add(1)
			_, err := mysqlstore.Tx(ctx).ExecContext(ctx, "INSERT INTO `"+rows+"` (step) VALUES (?)", name)
			return name + "-done", err
		}
	}
	h := func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if _, err := idem.Step(ctx, "reserve", step(0, "reserve")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if attempts.Add(1) == 1 {
			http.Error(w, "downstream failed", http.StatusInternalServerError)
			return
		}
		if _, err := idem.Step(ctx, "charge", step(1, "charge")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), h))
	defer srv.Close()
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "steps"); st != http.StatusInternalServerError {
		t.Fatalf("first attempt = %d %s, want 500", st, body)
	}
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "steps"); st != http.StatusCreated {
		t.Fatalf("retry = %d %s, want 201", st, body)
	}
	if st, _ := sqlfamilytest.Post(t, srv.Client(), srv.URL, "steps"); st != http.StatusCreated || attempts.Load() != 2 {
		t.Fatalf("replay = %d after %d attempts, want the 201 of two", st, attempts.Load())
	}
	for i, name := range []string{"reserve", "charge"} {
		if n := ran[i].Load(); n != 1 {
			t.Errorf("step %s ran %d times, want 1", name, n)
		}
		if n := mysqltest.Count(t, db, rows, "step = ?", name); n != 1 {
			t.Errorf("step %s: %d rows, want 1", name, n)
		}
	}
}

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

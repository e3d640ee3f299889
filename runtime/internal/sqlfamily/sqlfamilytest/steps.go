package sqlfamilytest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Step runs one step on s: fn's writes in the step's transaction (fn gets
// the context that carries it), then the journal entry.
func Step(s idemstore.StepStore, key, token string, fence int64, name, result string, fn func(ctx context.Context) error) error {
	ctx := context.Background()
	st, err := s.BeginStep(ctx, key, token, fence)
	if err != nil {
		return err
	}
	if fn != nil {
		if err := fn(st.Context(ctx)); err != nil {
			_ = st.Rollback(ctx)
			return err
		}
	}
	return st.Commit(ctx, name, []byte(result), time.Hour)
}

// testStepJournal: the owner's steps are journaled and read back; another
// token or fence can neither read nor write them; a record released and
// created again with the same fingerprint finds them, one with another
// fingerprint does not.
func testStepJournal(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	ctx := context.Background()
	a := Acquire(t, s, "k", "t1", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || len(got) != 0 {
		t.Fatalf("empty journal: %v, %v", got, err)
	}
	for _, name := range []string{"reserve", "charge"} {
		if err := Step(s, "k", "t1", a.Fence, name, `"`+name+`"`, nil); err != nil {
			t.Fatalf("step %s: %v", name, err)
		}
	}
	want := map[string][]byte{"reserve": []byte(`"reserve"`), "charge": []byte(`"charge"`)}
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %q, %v; want %q", got, err, want)
	}
	if _, err := s.LoadSteps(ctx, "k", "other"); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("load by another token: %v", err)
	}
	if err := Step(s, "k", "other", a.Fence, "x", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step by another token: %v", err)
	}
	if err := Step(s, "k", "t1", a.Fence+1, "x", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step with another fence: %v", err)
	}
	if err := s.Release(ctx, "k", "t1"); err != nil {
		t.Fatal(err)
	}
	Acquire(t, s, "k", "t2", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t2"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a release, same fingerprint: %q, %v", got, err)
	}
	if err := s.Release(ctx, "k", "t2"); err != nil {
		t.Fatal(err)
	}
	Acquire(t, s, "k", "t3", "another")
	if got, err := s.LoadSteps(ctx, "k", "t3"); err != nil || len(got) != 0 {
		t.Errorf("after a release, another fingerprint: %q, %v; want none", got, err)
	}
}

// testStepCommitsItsWritesWithItsEntry: a step's own writes commit with
// its journal entry, before the run's transaction does; a stale owner's
// step is refused and its writes rolled back.
func testStepCommitsItsWritesWithItsEntry(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	insert := func(ctx context.Context) error {
		_, err := d.InsertPayment(ctx, pay, "k", 1)
		return err
	}
	a := Acquire(t, s, "k", "t1", "fp")
	if err := Step(s, "k", "t1", a.Fence, "pay", "1", insert); err != nil {
		t.Fatal(err)
	}
	if n := db.Count(t, pay, "true"); n != 1 {
		t.Fatalf("%d payments after the step, want its 1 committed", n)
	}
	Lapse(t, d, db, table, "k", false)
	b := Acquire(t, s, "k", "t2", "fp")
	if b.Outcome != idemstore.OutcomeRecovered {
		t.Fatalf("takeover: %+v", b)
	}
	if err := Step(s, "k", "t1", a.Fence, "pay2", "1", insert); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("stale owner's step: %v, want ErrNotOwner", err)
	}
	if n := db.Count(t, pay, "true"); n != 1 {
		t.Errorf("%d payments after the stale step, want its write rolled back", n)
	}
	if got, err := s.LoadSteps(context.Background(), "k", "t2"); err != nil || len(got) != 1 {
		t.Errorf("new owner's journal %q, %v; want the first step only", got, err)
	}
}

// testStepsPurged: expired journal entries go with Purge.
func testStepsPurged(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	a := Acquire(t, s, "k", "t1", "fp")
	if err := Step(s, "k", "t1", a.Fence, "a", "1", nil); err != nil {
		t.Fatal(err)
	}
	db.Exec(t, "UPDATE "+d.Quote(table+"_steps")+" SET expires_at = "+d.Ago())
	if _, err := s.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := db.Count(t, table+"_steps", "true"); n != 0 {
		t.Errorf("%d journal entries after the purge", n)
	}
}

// testStepsOfAClaimedRun: through the engine, a run (its key claimed in
// its transaction) journals a step whose row commits with its entry in the
// step's own transaction, then fails (500, not stored): the run rolls
// back, the step's row and entry stay. The retry loads the journal (by the
// key and the request's fingerprint, the claim's row being uncommitted)
// and does not run the step again; its second step runs once. One row per
// step, and the key replays.
func testStepsOfAClaimedRun(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t) // a row per step, keyed by the step's name
	var ran [2]atomic.Int64
	var attempts atomic.Int64
	step := func(i int, name string) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			ran[i].Add(1)
			_, err := d.InsertPayment(ctx, pay, name, 0)
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
	srv := httptest.NewServer(ServePayments(idem.NewEngine(s), h))
	defer srv.Close()
	if st, body := Post(t, srv.Client(), srv.URL, "steps"); st != http.StatusInternalServerError {
		t.Fatalf("first attempt = %d %s, want 500", st, body)
	}
	if st, body := Post(t, srv.Client(), srv.URL, "steps"); st != http.StatusCreated {
		t.Fatalf("retry = %d %s, want 201", st, body)
	}
	if st, _ := Post(t, srv.Client(), srv.URL, "steps"); st != http.StatusCreated || attempts.Load() != 2 {
		t.Fatalf("replay = %d after %d attempts, want the 201 of two", st, attempts.Load())
	}
	for i, name := range []string{"reserve", "charge"} {
		if n := ran[i].Load(); n != 1 {
			t.Errorf("step %s ran %d times, want 1", name, n)
		}
		if n := db.Count(t, pay, KeyIs(d), name); n != 1 {
			t.Errorf("step %s: %d rows, want 1", name, n)
		}
	}
}

package memstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
	"github.com/idemgen/idemgen/runtime/internal/memhooks"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestConformance: the store passes every check of the suite on a fake
// clock, its runs in transactions (NewTx).
func TestConformance(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := memstore.NewTx(memstore.WithClock(clock.Now))
	idemstoretest.Run(t, idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Advance:  clock.Advance,
		TxWrite:  memhooks.TxWrite,
		TxMarked: memhooks.TxMarked(s),
	})
}

// TestConformanceInRealTime: it passes them on the real clock too, where
// the suite waits for short leases to lapse; and so does New, the store
// without transactions.
func TestConformanceInRealTime(t *testing.T) {
	s := memstore.NewTx()
	idemstoretest.Run(t, idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Lease:    50 * time.Millisecond,
		TxWrite:  memhooks.TxWrite,
		TxMarked: memhooks.TxMarked(s),
	})
	idemstoretest.Run(t, idemstoretest.Harness{
		New:   func() (idemstore.Store, error) { return memstore.New(), nil },
		Lease: 50 * time.Millisecond,
	})
}

// TestLookup: memhooks.Lookup shows a key's record as it stands (owner and fence in
// progress, a copy of the answer once completed) and nothing once its
// retention has lapsed; Keys lists the keys held.
func TestLookup(t *testing.T) {
	ctx := t.Context()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := memstore.New(memstore.WithClock(clock.Now))
	if _, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t1", Fingerprint: "fp", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	e, ok := memhooks.Lookup(s, "k")
	if !ok || e.Completed || e.Token != "t1" || e.Fence != 1 || e.Fingerprint != "fp" || !e.Until.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("in progress: %+v, %v", e, ok)
	}
	if err := s.Complete(ctx, "k", "t1", &idemstore.Record{Status: 201, Body: []byte("made")}, time.Hour); err != nil {
		t.Fatal(err)
	}
	e, ok = memhooks.Lookup(s, "k")
	if !ok || !e.Completed || e.Record == nil || e.Record.Status != 201 || string(e.Record.Body) != "made" {
		t.Fatalf("completed: %+v, %v", e, ok)
	}
	e.Record.Body[0] = 'X' // a copy
	if again, _ := memhooks.Lookup(s, "k"); string(again.Record.Body) != "made" {
		t.Errorf("memhooks.Lookup shares the record's body: %q", again.Record.Body)
	}
	if keys := s.Keys(); len(keys) != 1 || keys[0] != "k" {
		t.Errorf("Keys = %q", keys)
	}
	clock.Advance(time.Hour)
	if e, ok := memhooks.Lookup(s, "k"); ok {
		t.Errorf("after the retention: %+v", e)
	}
	if keys := s.Keys(); len(keys) != 0 {
		t.Errorf("Keys after the retention = %q", keys)
	}
}

// TestForgetAndStepKeys: a key's journal outlives a release (StepKeys
// lists it, Keys does not); the first step of a request of another
// fingerprint replaces it, so a key keeps one journal; Forget deletes the
// record and the journal, whereupon the same request finds no journal, and
// reports whether there was anything to delete.
func TestForgetAndStepKeys(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	run := func(tok, fp string) {
		t.Helper()
		if acq, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: tok, Fingerprint: fp, Lease: time.Minute}); err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
			t.Fatalf("acquire %s: %+v, %v", tok, acq, err)
		}
	}
	step := func(tok, name string) {
		t.Helper()
		tx, err := s.BeginStep(ctx, "k", tok, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx, name, []byte(`"`+name+`"`), time.Hour); err != nil {
			t.Fatalf("step %s of %s: %v", name, tok, err)
		}
	}
	steps := func(tok string) int {
		t.Helper()
		got, err := s.LoadSteps(ctx, "k", tok)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	release := func(tok string) {
		t.Helper()
		if err := s.Release(ctx, "k", tok); err != nil {
			t.Fatal(err)
		}
	}

	run("a1", "fpA")
	step("a1", "reserve")
	release("a1")
	if keys, jkeys := s.Keys(), s.StepKeys(); len(keys) != 0 || len(jkeys) != 1 || jkeys[0] != "k" {
		t.Fatalf("after a release: Keys %q, StepKeys %q", keys, jkeys)
	}
	run("b1", "fpB")
	step("b1", "charge")
	release("b1")
	run("a2", "fpA")
	if n := steps("a2"); n != 0 {
		t.Errorf("request A after a step of request B loads %d steps: its journal was not replaced", n)
	}
	step("a2", "reserve")
	if !s.Forget("k") {
		t.Error("Forget of a key in progress with a journal: nothing to delete")
	}
	if keys, jkeys := s.Keys(), s.StepKeys(); len(keys) != 0 || len(jkeys) != 0 {
		t.Errorf("after Forget: Keys %q, StepKeys %q", keys, jkeys)
	}
	if err := s.Release(ctx, "k", "a2"); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("Release by the run of a forgotten key: %v, want ErrNotOwner", err)
	}
	run("a3", "fpA")
	if n := steps("a3"); n != 0 {
		t.Errorf("after Forget, the same request loads %d steps", n)
	}
	release("a3")
	if s.Forget("k") {
		t.Error("Forget of a key with neither record nor journal deleted something")
	}
}

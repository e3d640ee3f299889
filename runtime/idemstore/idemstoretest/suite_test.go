package idemstoretest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
	"github.com/idemgen/idemgen/runtime/internal/memhooks"
)

// memHarness is the harness of the reference store (memstore, its runs in
// transactions) on a fake clock.
func memHarness() (idemstoretest.Harness, *memstore.TxStore) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := memstore.NewTx(memstore.WithClock(clock.Now))
	return idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Advance:  clock.Advance,
		TxWrite:  memhooks.TxWrite,
		TxMarked: memhooks.TxMarked(s),
	}, s
}

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

// TestMemStore: the reference store passes every check, on a fake clock
// (memstore's own tests run it on the real clock too).
func TestMemStore(t *testing.T) {
	h, _ := memHarness()
	idemstoretest.Run(t, h)
}

// fenceStuck is a store whose fence never increments: a takeover answers
// fence 1, as the first run did, so a stale owner's downstream writes
// cannot be told from the new owner's.
type fenceStuck struct{ *memstore.TxStore }

func (s fenceStuck) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	acq, err := s.TxStore.Acquire(ctx, req)
	if acq.Outcome == idemstore.OutcomeRecovered {
		acq.Fence = 1
	}
	return acq, err
}

func (s fenceStuck) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, tx, err := s.TxStore.AcquireRun(ctx, req)
	if tx != nil {
		acq.Fence = 1
	}
	return acq, tx, err
}

// staleCompletes is a store that lets any token complete a record in
// progress: a stale owner overwrites the newer owner's result.
type staleCompletes struct{ *memstore.TxStore }

func (s staleCompletes) Complete(ctx context.Context, key, _ string, rec *idemstore.Record, retention time.Duration) error {
	e, ok := memhooks.Lookup(s.TxStore, key)
	if !ok || e.Completed {
		return idemstore.ErrNotOwner
	}
	return s.TxStore.Complete(ctx, key, e.Token, rec, retention) // as its current owner
}

// staleSteps is a store that journals any run's step, owner or not: a
// stale run's step lands in the newer run's journal, which then skips a
// step it never ran.
type staleSteps struct{ *memstore.TxStore }

func (s staleSteps) BeginStep(_ context.Context, key, _ string, _ int64) (idemstore.StepTx, error) {
	return staleStep{s.TxStore, key}, nil
}

type staleStep struct {
	s   *memstore.TxStore
	key string
}

func (st staleStep) Context(ctx context.Context) context.Context { return ctx }
func (st staleStep) Rollback(context.Context) error              { return nil }

func (st staleStep) Commit(ctx context.Context, name string, result []byte, retention time.Duration) error {
	e, ok := memhooks.Lookup(st.s, st.key)
	if !ok || e.Completed {
		return idemstore.ErrNotOwner
	}
	tx, err := st.s.BeginStep(ctx, st.key, e.Token, e.Fence) // as its current owner
	if err != nil {
		return err
	}
	return tx.Commit(ctx, name, result, retention)
}

// TestCheckFailsBrokenStores: the suite fails a store whose fence never
// increments, one that lets a stale owner complete and one that journals a
// stale run's step, in the checks that state what they break, and in no
// other.
func TestCheckFailsBrokenStores(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*memstore.TxStore) idemstore.Store
		want []string // the checks it fails
	}{
		{"fence never increments", func(s *memstore.TxStore) idemstore.Store { return fenceStuck{s} },
			[]string{"Takeover", "StaleOwner", "LeaseBoundary", "ConcurrentTakeover", "TxRollback", "TxStaleCommit", "StepsAfterTakeover"}},
		{"stale owner completes", func(s *memstore.TxStore) idemstore.Store { return staleCompletes{s} },
			[]string{"NotOwner", "StaleOwner"}},
		{"stale run journals a step", func(s *memstore.TxStore) idemstore.Store { return staleSteps{s} },
			[]string{"StepsAfterTakeover"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, s := memHarness()
			h.New = func() (idemstore.Store, error) { return tc.wrap(s), nil }
			err := idemstoretest.Check(h)
			var failed []string
			for _, e := range unjoin(err) {
				var ce *idemstoretest.CheckError
				if !errors.As(e, &ce) {
					t.Fatalf("Check: %v, not a *CheckError", e)
				}
				failed = append(failed, ce.Check)
				t.Logf("%v", ce)
			}
			if !slices.Equal(failed, tc.want) {
				t.Errorf("failed checks %q, want %q", failed, tc.want)
			}
		})
	}
}

// TestCheckPassesTheReference: Check returns nil for a store that passes.
func TestCheckPassesTheReference(t *testing.T) {
	h, _ := memHarness()
	if err := idemstoretest.Check(h); err != nil {
		t.Errorf("Check of the reference store: %v", err)
	}
}

// TestCheckNeedsNew: a harness without a store is an error that says so.
func TestCheckNeedsNew(t *testing.T) {
	if err := idemstoretest.Check(idemstoretest.Harness{}); err == nil {
		t.Error("Check of an empty harness: nil error")
	}
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

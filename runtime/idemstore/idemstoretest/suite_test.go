package idemstoretest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
)

// memHarness is the harness of a memStore on a fake clock.
func memHarness() (idemstoretest.Harness, *memStore) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newMemStore(clock.Now)
	return idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Advance:  clock.Advance,
		TxWrite:  txWrite,
		TxMarked: s.txMarked,
	}, s
}

// TestMemStore: the reference store passes every check, on a fake clock.
func TestMemStore(t *testing.T) {
	h, _ := memHarness()
	idemstoretest.Run(t, h)
}

// TestMemStoreInRealTime: it passes them on the real clock too, where the
// suite waits for short leases to lapse.
func TestMemStoreInRealTime(t *testing.T) {
	s := newMemStore(time.Now)
	idemstoretest.Run(t, idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Lease:    50 * time.Millisecond,
		TxWrite:  txWrite,
		TxMarked: s.txMarked,
	})
}

// fenceStuck is a store whose fence never increments: a takeover answers
// fence 1, as the first run did, so a stale owner's downstream writes
// cannot be told from the new owner's.
type fenceStuck struct{ *memStore }

func (s fenceStuck) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	acq, err := s.memStore.Acquire(ctx, req)
	if acq.Outcome == idemstore.OutcomeRecovered {
		acq.Fence = 1
	}
	return acq, err
}

func (s fenceStuck) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, tx, err := s.memStore.AcquireRun(ctx, req)
	if tx != nil {
		acq.Fence = 1
	}
	return acq, tx, err
}

// staleCompletes is a store that lets any token complete a record in
// progress: a stale owner overwrites the newer owner's result.
type staleCompletes struct{ *memStore }

func (s staleCompletes) Complete(ctx context.Context, key, _ string, rec *idemstore.Record, retention time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[key]
	if r == nil || r.done {
		return idemstore.ErrNotOwner
	}
	return s.completeLocked(r, rec, retention)
}

// staleSteps is a store that journals any run's step, owner or not: a
// stale run's step lands in the newer run's journal, which then skips a
// step it never ran.
type staleSteps struct{ *memStore }

func (s staleSteps) BeginStep(_ context.Context, key, _ string, _ int64) (idemstore.StepTx, error) {
	return staleStep{s.memStore, key}, nil
}

type staleStep struct {
	s   *memStore
	key string
}

func (st staleStep) Context(ctx context.Context) context.Context { return ctx }
func (st staleStep) Rollback(context.Context) error              { return nil }

func (st staleStep) Commit(_ context.Context, name string, result []byte, _ time.Duration) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	r := st.s.recs[st.key]
	if r == nil {
		return idemstore.ErrNotOwner
	}
	sk := stepKey{st.key, r.fp}
	if st.s.steps[sk] == nil {
		st.s.steps[sk] = map[string][]byte{}
	}
	st.s.steps[sk][name] = result
	return nil
}

// TestCheckFailsBrokenStores: the suite fails a store whose fence never
// increments, one that lets a stale owner complete and one that journals a
// stale run's step, in the checks that state what they break, and in no
// other.
func TestCheckFailsBrokenStores(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*memStore) idemstore.Store
		want []string // the checks it fails
	}{
		{"fence never increments", func(s *memStore) idemstore.Store { return fenceStuck{s} },
			[]string{"Takeover", "StaleOwner", "LeaseBoundary", "ConcurrentTakeover", "TxRollback", "TxStaleCommit", "StepsAfterTakeover"}},
		{"stale owner completes", func(s *memStore) idemstore.Store { return staleCompletes{s} },
			[]string{"NotOwner", "StaleOwner"}},
		{"stale run journals a step", func(s *memStore) idemstore.Store { return staleSteps{s} },
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

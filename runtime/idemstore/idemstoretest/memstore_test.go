package idemstoretest_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// memStore is a TxStore and a StepStore in memory, written from idemstore's documentation
// alone: the suite's reference for a store of one's own. Its clock is now.
type memStore struct {
	now   func() time.Time
	mu    sync.Mutex            // guards the fields below
	recs  map[string]*memRecord // by key
	marks map[string]bool       // the marks committed runs wrote (TxWrite)
	steps map[stepKey]map[string][]byte
	// claims numbers AcquireRun's claims, store-wide, so that a claim's
	// fence is above every earlier claim's of its key (as a transaction
	// id is) even after a rollback deleted the record.
	claims int64
}

// memRecord is one key's record.
type memRecord struct {
	fp, token string
	fence     int64
	until     time.Time // the lease's deadline, or the expiry of a completed record
	done      bool
	rec       idemstore.Record
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{now: now, recs: map[string]*memRecord{}, marks: map[string]bool{}, steps: map[stepKey]map[string][]byte{}}
}

// Acquire implements idemstore.Store.
func (s *memStore) Acquire(_ context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.recs[req.Key]
	if r != nil && r.done && !now.Before(r.until) {
		r = nil // expired
	}
	switch {
	case r == nil:
		s.recs[req.Key] = &memRecord{fp: req.Fingerprint, token: req.Token, fence: 1, until: now.Add(req.Lease)}
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, nil
	case r.fp != req.Fingerprint:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil
	case r.done:
		rec := r.rec
		rec.Header, rec.Body = rec.Header.Clone(), bytes.Clone(rec.Body)
		return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: &rec}, nil
	case now.Before(r.until):
		return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: r.until.Sub(now)}, nil
	}
	r.token, r.until = req.Token, now.Add(req.Lease)
	r.fence++
	return idemstore.Acquisition{Outcome: idemstore.OutcomeRecovered, Fence: r.fence}, nil
}

// owned returns key's in-progress record if token owns it. s.mu is held.
func (s *memStore) owned(key, token string) *memRecord {
	if r := s.recs[key]; r != nil && !r.done && r.token == token {
		return r
	}
	return nil
}

// Complete implements idemstore.Store.
func (s *memStore) Complete(_ context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completeLocked(s.owned(key, token), rec, retention)
}

func (s *memStore) completeLocked(r *memRecord, rec *idemstore.Record, retention time.Duration) error {
	if r == nil {
		return idemstore.ErrNotOwner
	}
	r.done, r.until = true, s.now().Add(retention)
	r.rec = *rec
	r.rec.Header, r.rec.Body = rec.Header.Clone(), bytes.Clone(rec.Body)
	return nil
}

// Release implements idemstore.Store.
func (s *memStore) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owned(key, token) == nil {
		return idemstore.ErrNotOwner
	}
	delete(s.recs, key)
	return nil
}

// Extend implements idemstore.Store.
func (s *memStore) Extend(_ context.Context, key, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(key, token)
	if r == nil {
		return idemstore.ErrNotOwner
	}
	r.until = s.now().Add(lease)
	return nil
}

// AcquireRun implements idemstore.TxStore: the claim is an in-progress
// record as Acquire makes it, whose lease ends a frozen owner's claim and
// which Rollback releases.
func (s *memStore) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, err := s.Acquire(ctx, req)
	if err != nil || (acq.Outcome != idemstore.OutcomeFirstRun && acq.Outcome != idemstore.OutcomeRecovered) {
		return acq, nil, err
	}
	s.mu.Lock()
	s.claims = max(s.claims+1, acq.Fence)
	acq.Fence = s.claims
	s.recs[req.Key].fence = acq.Fence
	s.mu.Unlock()
	return acq, &memTx{s: s, key: req.Key, token: req.Token, fence: acq.Fence}, nil
}

// memTx is a run's transaction: the marks it wrote, committed with its
// record.
type memTx struct {
	s          *memStore
	key, token string
	fence      int64
	marks      []string // written, not yet committed
	done       bool     // committed or rolled back
}

type txKey struct{}

// Context implements idemstore.RunTx.
func (tx *memTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Commit implements idemstore.RunTx.
func (tx *memTx) Commit(_ context.Context, rec *idemstore.Record, retention time.Duration) error {
	s := tx.s
	s.mu.Lock()
	defer s.mu.Unlock()
	tx.done = true
	r := s.owned(tx.key, tx.token)
	if r == nil || r.fence != tx.fence {
		return idemstore.ErrNotOwner
	}
	for _, m := range tx.marks {
		s.marks[m] = true
	}
	return s.completeLocked(r, rec, retention)
}

// Rollback implements idemstore.RunTx: the claim is released.
func (tx *memTx) Rollback(ctx context.Context) error {
	if tx.done {
		return nil
	}
	tx.done, tx.marks = true, nil
	if err := tx.s.Release(ctx, tx.key, tx.token); err != nil && !errors.Is(err, idemstore.ErrNotOwner) {
		return err
	}
	return nil
}

// txWrite is Harness.TxWrite for memStore.
func txWrite(ctx context.Context, mark string) error {
	tx := ctx.Value(txKey{}).(*memTx)
	tx.marks = append(tx.marks, mark)
	return nil
}

// txMarked is Harness.TxMarked for s.
func (s *memStore) txMarked(_ context.Context, mark string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marks[mark], nil
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

// stepKey is the journal's key in a memStore: the record's key and its
// request's fingerprint.
type stepKey struct{ key, fp string }

// LoadSteps implements idemstore.StepStore.
func (s *memStore) LoadSteps(_ context.Context, key, token string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(key, token)
	if r == nil {
		return nil, idemstore.ErrNotOwner
	}
	steps := map[string][]byte{}
	for name, result := range s.steps[stepKey{key, r.fp}] {
		steps[name] = bytes.Clone(result)
	}
	return steps, nil
}

// BeginStep implements idemstore.StepStore.
func (s *memStore) BeginStep(_ context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	return &memStep{s: s, key: key, token: token, fence: fence}, nil
}

// memStep is one step of a run: its result is journaled by the run that
// owns the lease, token and fence.
type memStep struct {
	s          *memStore
	key, token string
	fence      int64
}

// Context implements idemstore.StepTx.
func (st *memStep) Context(ctx context.Context) context.Context { return ctx }

// Commit implements idemstore.StepTx. The journal outlives the record (a
// released run leaves it to the next); this reference store keeps it for
// as long as it runs.
func (st *memStep) Commit(_ context.Context, name string, result []byte, _ time.Duration) error {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(st.key, st.token)
	if r == nil || r.fence != st.fence {
		return idemstore.ErrNotOwner
	}
	sk := stepKey{st.key, r.fp}
	if s.steps[sk] == nil {
		s.steps[sk] = map[string][]byte{}
	}
	s.steps[sk][name] = bytes.Clone(result)
	return nil
}

// Rollback implements idemstore.StepTx: a memStep writes nothing before
// Commit.
func (st *memStep) Rollback(context.Context) error { return nil }

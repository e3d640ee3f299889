package memstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TxStore is a Store whose runs are transactions (idemstore.TxStore):
// what a handler writes through its run's context is committed with the
// run's record, or not at all.
type TxStore struct {
	*Store
	mu sync.Mutex // guards claims
	// claims numbers AcquireRun's claims, store-wide, so that a claim's
	// fence is above every earlier claim's of its key (as a transaction
	// id is) even after a rollback deleted the record.
	claims int64
}

// NewTx returns an empty TxStore.
func NewTx(opts ...Option) *TxStore { return &TxStore{Store: New(opts...)} }

// AcquireRun implements idemstore.TxStore: the claim is an in-progress
// record as Acquire makes it, whose lease ends a frozen owner's claim and
// which Rollback releases.
func (s *TxStore) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, err := s.Acquire(ctx, req)
	if err != nil || (acq.Outcome != idemstore.OutcomeFirstRun && acq.Outcome != idemstore.OutcomeRecovered) {
		return acq, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Store.mu.Lock()
	defer s.Store.mu.Unlock()
	s.claims = max(s.claims+1, acq.Fence)
	acq.Fence = s.claims
	s.recs[req.Key].fence = acq.Fence
	return acq, &memTx{s: s.Store, key: req.Key, token: req.Token, fence: acq.Fence, lease: req.Lease}, nil
}

// memTx is a run's transaction: the marks it wrote, committed with its
// record. Its claim is an in-progress record whose lease KeepAlive extends
// (idemstore.LiveRunTx).
type memTx struct {
	s          *Store
	key, token string
	fence      int64
	lease      time.Duration // the claim's: KeepAlive extends it by that much
	marks      []string      // written, not yet committed
	done       bool          // committed or rolled back
}

var _ idemstore.LiveRunTx = (*memTx)(nil)

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

// KeepAlive implements idemstore.LiveRunTx: the claim's lease is extended.
func (tx *memTx) KeepAlive(ctx context.Context) error {
	return tx.s.Extend(ctx, tx.key, tx.token, tx.lease)
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

// txWrite writes mark through the run's transaction that ctx (a handler's
// context under a TxStore) carries: it is committed with the run's record
// (memhooks.TxWrite, for idemstoretest.Harness.TxWrite). It panics without
// such a transaction.
func txWrite(ctx context.Context, mark string) error {
	tx := idemstore.Value(ctx, txKey{}).(*memTx)
	tx.marks = append(tx.marks, mark)
	return nil
}

// txMarked reports whether a committed run wrote mark (memhooks.TxMarked,
// for idemstoretest.Harness.TxMarked).
func (s *Store) txMarked(mark string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marks[mark]
}

package memstore

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TxStore is a Store whose runs are transactions (idemstore.TxStore):
// what a handler writes through its run's context with TxWrite is
// committed with the run's record, or not at all.
type TxStore struct{ *Store }

// NewTx returns an empty TxStore.
func NewTx(opts ...Option) *TxStore { return &TxStore{New(opts...)} }

// BeginRun implements idemstore.TxStore.
func (s *TxStore) BeginRun(_ context.Context, key, token string, fence int64) (idemstore.RunTx, error) {
	return &memTx{s: s.Store, key: key, token: token, fence: fence}, nil
}

// memTx is a run's transaction: the marks it wrote, committed with its
// record.
type memTx struct {
	s          *Store
	key, token string
	fence      int64
	marks      []string // written, not yet committed
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
	r := s.owned(tx.key, tx.token)
	if r == nil || r.fence != tx.fence {
		return idemstore.ErrNotOwner
	}
	for _, m := range tx.marks {
		s.marks[m] = true
	}
	return s.completeLocked(r, rec, retention)
}

// Rollback implements idemstore.RunTx.
func (tx *memTx) Rollback(context.Context) error {
	tx.marks = nil // after Commit, nothing is left to roll back
	return nil
}

// TxWrite writes mark through the run's transaction that ctx (a handler's
// context under a TxStore) carries: it is committed with the run's record
// (idemstoretest.Harness.TxWrite). It panics without such a transaction.
func TxWrite(ctx context.Context, mark string) error {
	tx := ctx.Value(txKey{}).(*memTx)
	tx.marks = append(tx.marks, mark)
	return nil
}

// TxMarked reports whether a committed run wrote mark
// (idemstoretest.Harness.TxMarked).
func (s *Store) TxMarked(_ context.Context, mark string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marks[mark], nil
}

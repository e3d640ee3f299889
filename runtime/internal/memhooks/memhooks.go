// Package memhooks is what the runtime's tests read and write of the
// reference store, runtime/idemstore/memstore, beyond its API: what it
// holds under a key, and the marks a handler writes through a run's
// transaction (the conformance suite's Harness.TxWrite and TxMarked).
// memstore hands its functions to Link in its init, so that they are not
// promises of its exported API.
package memhooks

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Entry is what a memstore holds under a key.
type Entry struct {
	Fingerprint string
	Token       string // the owner's, while in progress
	Fence       int64
	Completed   bool
	// Until is the lease's deadline while in progress, the end of the
	// retention once completed.
	Until  time.Time
	Record *idemstore.Record // the stored answer, once completed (a copy)
}

// Hooks are memstore's functions; store is a *memstore.Store or a
// *memstore.TxStore.
type Hooks struct {
	Lookup   func(store any, key string) (Entry, bool)
	TxWrite  func(ctx context.Context, mark string) error
	TxMarked func(store any, mark string) bool
}

// hooks is set once, by memstore's init, before any test runs.
var hooks Hooks

// Link sets the hooks; memstore's init calls it.
func Link(h Hooks) { hooks = h }

// Lookup returns what store holds under key, and false when it holds
// nothing (or a completed record whose retention has lapsed).
func Lookup(store any, key string) (Entry, bool) { return hooks.Lookup(store, key) }

// TxWrite writes mark through the run's transaction that ctx (a handler's
// context under a memstore.TxStore) carries: it is committed with the
// run's record. It panics without such a transaction.
func TxWrite(ctx context.Context, mark string) error { return hooks.TxWrite(ctx, mark) }

// TxMarked returns the conformance suite's Harness.TxMarked of store: it
// reports whether a committed run wrote mark.
func TxMarked(store any) func(ctx context.Context, mark string) (bool, error) {
	return func(_ context.Context, mark string) (bool, error) { return hooks.TxMarked(store, mark), nil }
}

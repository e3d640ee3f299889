package idemstore

import (
	"context"
	"time"
)

// TxStore is a [Store] that commits a handler's own database writes together
// with its result. When the engine's store implements it, a protected run
// goes like this: Acquire commits the lease on its own (a concurrent
// duplicate sees it); BeginRun opens a transaction; the handler runs with
// the context of [RunTx.Context], through which it reaches the transaction
// (package pgstore: pgstore.Tx); a storable response is written into the
// same transaction by [RunTx.Commit], which checks the owner under the
// record's row lock and commits, and only then is the client answered.
//
// Everything else ends in a rollback and a release of the lease: a handler
// error, no response, a status that is not stored, a panic, a request
// cancelled before the commit. A completion refused because the lease was
// taken over rolls back too, and the client gets what the key stands for
// now, as with any store. The heartbeat extends the lease through
// [Store.Extend], outside the transaction.
type TxStore interface {
	Store
	// BeginRun opens the transaction of the run that owns key's lease with
	// token and fence (just acquired). ctx is the request's, detached from
	// its cancellation and bounded by the store timeout. An error is a
	// store failure: the engine releases the lease and answers 503
	// store-unavailable without running the handler.
	BeginRun(ctx context.Context, key, token string, fence int64) (RunTx, error)
}

// RunTx is the transaction of one protected run (see [TxStore]).
type RunTx interface {
	// Context returns ctx carrying the transaction, for the handler.
	Context(ctx context.Context) context.Context
	// Commit writes rec as the key's result, kept for retention, if the
	// run's token and fence still own the in-progress lease (checked under
	// the record's row lock), then commits the transaction. It returns nil
	// once committed; ErrNotOwner when refused, the transaction rolled
	// back; otherwise an error matching [ErrStoreUnavailable], when the
	// commit is known not to have happened or its fate could not be
	// learned. A commit whose answer was lost is looked up before Commit
	// returns, so that nil is returned if it did commit. rec is shared with
	// the response being sent, as in [Store.Complete].
	Commit(ctx context.Context, rec *Record, retention time.Duration) error
	// Rollback rolls the transaction back. It does nothing after Commit.
	Rollback(ctx context.Context) error
}

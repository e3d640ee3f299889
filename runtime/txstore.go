package idem

import (
	"context"
	"errors"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// uncommittedError ends a transactional run whose handler's writes were not
// committed: kind (unavailable or cancelled) is the outcome protect answers.
type uncommittedError struct {
	kind outcomeKind
	err  error
}

// Error implements error.
func (e *uncommittedError) Error() string { return "idem: run not committed: " + e.err.Error() }

// Unwrap returns the cause.
func (e *uncommittedError) Unwrap() error { return e.err }

// runTx is lease.run for a TxStore: fn runs inside the store's transaction,
// and a storable response is committed with it before runTx returns it. A
// response that is not stored, an error, no response or a panic roll the
// transaction back and release the lease; so does a request cancelled
// before the commit, which ends in an *uncommittedError (cancelled), as
// does a transaction that could not begin or commit (unavailable). A
// refused commit (the lease was taken over) is answered as lease.run
// answers it, with a *supersededError.
func (l *lease) runTx(ctx context.Context, ts idemstore.TxStore, fn func(context.Context) (*Response, error)) (*Response, error) {
	sctx, s := l.startCall(ctx, "begin")
	tx, err := ts.BeginRun(l.e.deadlines.Context(sctx), l.k.storageKey, l.token, l.info.Fence)
	s.done(Event{Err: err})
	if err != nil {
		l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, Event{Fence: l.info.Fence, Err: err}, levelError, "idem: begin failed")
		l.release(ctx, err)
		return nil, &uncommittedError{kind: unavailable, err: storeFailure("begin", err)}
	}
	l.startHeartbeat(ctx)
	settled := false
	defer func() {
		if !settled { // fn panicked: roll back, release, and let the panic continue
			l.stopHeartbeat()
			l.rollback(ctx, tx)
			l.release(ctx, errPanicked)
		}
	}()
	resp, err := fn(tx.Context(l.handlerContext(ctx)))
	settled = true
	l.stopHeartbeat()
	cause := notStored(l.k.op, resp, err)
	if cause == nil && ctx.Err() != nil {
		// The client is gone: nobody would learn of a commit.
		l.rollback(ctx, tx)
		l.release(ctx, ctx.Err())
		return nil, &uncommittedError{kind: cancelled, err: ctx.Err()}
	}
	if cause != nil {
		l.rollback(ctx, tx)
		l.release(ctx, cause)
		if err != nil {
			return nil, err // as lease.run: the error, no response
		}
		return resp, nil // the response that is not stored, or none
	}
	l.record = newRecord(resp, l.e.allow, l.e.cfg.storedBodyLimit)
	rec := &l.record
	sctx, s = l.startCall(ctx, "complete")
	err = tx.Commit(l.e.deadlines.Context(sctx), rec, opRetention(l.k.op))
	s.done(Event{Status: rec.Status, Err: err})
	ev := Event{Fence: l.info.Fence, Status: rec.Status, Err: err}
	switch {
	case err == nil:
		l.e.report(ctx, l.k, l.e.cfg.hooks.Completed, ev, 0, "")
		return resp, nil
	case errors.Is(err, idemstore.ErrNotOwner):
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost before completion; the run's transaction was rolled back")
		return nil, l.superseded(ctx)
	}
	// Not committed, or not known to be: the client is told to retry. The
	// release is owner-checked, so it undoes nothing if the commit happened
	// after all (the retry then replays it).
	l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: commit failed; the handler's writes are not answered")
	l.release(ctx, err)
	return nil, &uncommittedError{kind: unavailable, err: storeFailure("complete", err)}
}

// rollback rolls the run's transaction back; a failure is reported (the
// database rolls back a transaction whose connection is gone).
func (l *lease) rollback(ctx context.Context, tx idemstore.RunTx) {
	sctx, s := l.startCall(ctx, "rollback")
	err := tx.Rollback(l.e.deadlines.Context(sctx))
	s.done(Event{Err: err})
	if err != nil {
		l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, Event{Fence: l.info.Fence, Err: err}, levelError, "idem: rollback failed")
	}
}

// storeFailure makes err match ErrStoreUnavailable.
func storeFailure(op string, err error) error {
	if errors.Is(err, ErrStoreUnavailable) {
		return err
	}
	return &idemstore.StoreError{Op: op, Err: err}
}

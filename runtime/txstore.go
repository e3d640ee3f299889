package idem

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// uncommittedError ends a transactional run whose result was not
// committed, with the handler's writes rolled back or never known to be
// kept: protect answers it (uncommitted) with its problem.
type uncommittedError struct {
	err error // the store's, or idemstore.ErrTxEnded
}

// Error implements error.
func (e *uncommittedError) Error() string { return "idem: run not committed: " + e.err.Error() }

// Unwrap returns the cause.
func (e *uncommittedError) Unwrap() error { return e.err }

// uncommittedProblem is the answer to a run that did not commit because of
// err: 500 transaction-ended when the handler ended the transaction
// itself, or tried to (a fault of the handler's); 500
// store-completion-failed when the store refused the completion for how it
// is set up (a constraint, a trigger, a value too large: a retry would run
// the handler again to the same refusal); otherwise 503
// store-completion-failed with Retry-After (the store failed, or the claim
// ended with nothing holding the key: a retry runs at once).
func uncommittedProblem(err error) *Problem {
	switch {
	case errors.Is(err, idemstore.ErrTxEnded):
		return NewProblem(http.StatusInternalServerError, idemop.CodeTransactionEnded,
			"the handler ended, or tried to end, the idempotency store's transaction itself, so its result was not stored; the key is free")
	case errors.Is(err, idemstore.ErrStoreMisconfigured):
		return NewProblem(http.StatusInternalServerError, idemop.CodeStoreCompletionFailed,
			"the idempotency store refused to store the result with the handler's writes, which were rolled back; the key is free")
	}
	p := NewProblem(http.StatusServiceUnavailable, idemop.CodeStoreCompletionFailed,
		"the result and the handler's writes were not committed, or not known to be; the key is free: retry later (a result that was committed after all is replayed)")
	p.RetryAfter = time.Second
	return p
}

// runTx is lease.run for a TxStore's claim (l.tx, from AcquireRun): fn
// runs inside the claim's transaction, and a storable response is committed
// with it before runTx returns it. The transaction holds the claim, and the
// store ends it if its owner freezes (see idemstore.TxStore); while fn runs,
// the heartbeat keeps a LiveRunTx alive instead of extending a lease, so
// that a handler slower than the lock keeps its claim. A response that is
// not stored, an error, no response or a panic roll the transaction back,
// which releases the claim. A storable response is committed even when the
// client has gone meanwhile (its retry is answered the stored response, as
// on every store): the commit's context is the engine's, not the
// request's; a handler that returned because of the cancellation returned
// an error or no answer, and is rolled back. A commit that failed ends in
// an *uncommittedError, logged. A commit refused because the claim was lost
// meanwhile (a frozen owner's) is answered as lease.run answers a lease
// taken over, with a *supersededError, unless nothing holds the key now:
// the claim ended without a newer run (its connection dropped, say), and
// the run did not commit, which is an *uncommittedError too.
func (l *lease) runTx(ctx context.Context, fn func(context.Context) (*Response, error)) (*Response, error) {
	tx := l.tx
	if _, ok := tx.(idemstore.LiveRunTx); ok {
		l.startHeartbeat(ctx)
	}
	settled := false
	defer func() {
		if !settled { // fn panicked: roll back, and let the panic continue
			l.stopHeartbeat()
			l.rollback(ctx, errPanicked)
		}
	}()
	resp, err := fn(tx.Context(l.handlerContext(ctx)))
	settled = true
	l.stopHeartbeat()
	cause := notStored(l.k.op, resp, err)
	if cause != nil {
		l.rollback(ctx, cause)
		if err != nil {
			return nil, err // as lease.run: the error, no response
		}
		return resp, nil // the response that is not stored, or none
	}
	l.record = newRecord(resp, l.e.allow, l.e.cfg.storedBodyLimit)
	rec := &l.record
	sctx, s := l.startCall(ctx, "complete")
	err = tx.Commit(l.e.deadlines.Context(sctx), rec, opRetention(l.k.op))
	s.done(Event{Status: rec.Status, Err: err})
	ev := Event{Fence: l.info.Fence, Status: rec.Status, Err: err}
	switch {
	case err == nil:
		l.e.report(ctx, l.k, l.e.cfg.hooks.Completed, ev, 0, "")
		return resp, nil
	case errors.Is(err, idemstore.ErrNotOwner):
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: claim lost before completion; the run's transaction was rolled back")
		if s := l.superseded(ctx); !s.vacant {
			return nil, s
		}
		l.e.report(ctx, l.k, nil, ev, levelError, "idem: the run's transaction ended before its completion, and no other run holds the key: nothing is stored, and the key is free")
		return nil, &uncommittedError{err: storeFailure("complete", err)}
	case errors.Is(err, idemstore.ErrTxEnded):
		// Not the store's failure: the key is released, as after a
		// handler's error.
		l.e.report(ctx, l.k, l.e.cfg.hooks.Released, ev, levelError, "idem: the handler ended, or tried to end, the run's transaction itself (a COMMIT or ROLLBACK sent as SQL): its result is not stored, and the key is free; leave the end of the transaction to the engine")
		return nil, &uncommittedError{err: err}
	}
	// Not committed, or not known to be: the client is told so. The
	// transaction is over either way, and the claim with it (a commit that
	// happened after all is replayed to the retry).
	l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: commit failed; the handler's writes are not answered, and the key is free")
	return nil, &uncommittedError{err: storeFailure("complete", err)}
}

// rollback rolls the claim's transaction back, which releases the claim;
// cause says why. A failure is reported (the database rolls back a
// transaction whose connection is gone, so the claim is released all the
// same).
func (l *lease) rollback(ctx context.Context, cause error) {
	sctx, s := l.startCall(ctx, "rollback")
	err := l.tx.Rollback(l.e.deadlines.Context(sctx))
	s.done(Event{Err: err})
	ev := Event{Fence: l.info.Fence, Err: err}
	if err != nil {
		l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: rollback failed")
		return
	}
	ev.Err = cause
	l.e.report(ctx, l.k, l.e.cfg.hooks.Released, ev, 0, "")
}

// storeFailure makes err match ErrStoreUnavailable.
func storeFailure(op string, err error) error {
	if errors.Is(err, idemstore.ErrStoreUnavailable) {
		return err
	}
	return &idemstore.StoreError{Op: op, Err: err}
}

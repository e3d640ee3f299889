package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/deadline"
)

// lease is an in-progress record this attempt owns.
type lease struct {
	e     *Engine
	k     *keyedRequest
	token string
	info  Info
	hb    heartbeat // while run runs fn
	// tx is the open transaction that holds the claim, for an
	// idemstore.TxStore (txstore.go); nil for a plain store's lease.
	tx idemstore.RunTx

	// record is what run stores, handlerCtx its handler's context and
	// completeCtx the context of its first completion attempt, kept here to
	// save allocations.
	record      idemstore.Record
	handlerCtx  infoCtx
	completeCtx deadline.Ctx

	// state and scope are what the handler's context carries for derived
	// keys and steps (derive.go, step.go).
	state runState
	scope runScope

	// extended is when the lease was last taken or extended, read just
	// before each: the acquire's reading (of its store call's deadline,
	// so a first run reads no clock for it), each extension's. The lease
	// begins after it, up to one round trip, so the bounds computed from
	// it (completeAgain's, the heartbeat's) are early, on the safe side.
	// The heartbeat writes it while fn runs; stopHeartbeat waits for that.
	extended time.Time
}

// reconcile runs the reconciler before a recovered lease runs again; on its
// error the lease is released and the error returned.
func (l *lease) reconcile(ctx context.Context, r *http.Request) error {
	if !l.info.Recovered || l.e.cfg.reconciler == nil {
		return nil
	}
	if err := l.e.cfg.reconciler(withInfo(ctx, &l.info), l.info, r); err != nil {
		l.release(ctx, err)
		return err
	}
	return nil
}

// run runs fn as the owner of the lease, with the heartbeat on and the
// lease's Info in its context, then settles the record: a storable response
// is stored before run returns it; an error, a nil response, a response that
// is not storable, or a panic releases the lease (the panic goes on after
// the release).
//
// If the store refuses the result because this attempt's lease was taken
// over (its handler outlived the lease and a retry recovered the record),
// the result is not what the key stands for any more: the newer run's is,
// or will be. run then returns a *supersededError carrying what the store
// answers now (see lease.superseded) instead of the stale result, so the
// client gets the same answer as its retry would.
func (l *lease) run(ctx context.Context, fn func(context.Context) (*Response, error)) (*Response, error) {
	if l.tx != nil {
		return l.runTx(ctx, fn) // txstore.go
	}
	l.startHeartbeat(ctx)
	settled := false
	defer func() {
		if !settled { // fn panicked: release and let the panic continue
			l.stopHeartbeat()
			l.release(ctx, errPanicked)
		}
	}()
	resp, err := fn(l.handlerContext(ctx))
	settled = true
	l.stopHeartbeat()
	if cause := notStored(l.k.op, resp, err); cause != nil {
		l.release(ctx, cause)
		if err != nil {
			return nil, err
		}
		return resp, nil // the response that is not stored, or none
	}
	l.record = newRecord(resp, l.e.allow, l.e.cfg.storedBodyLimit)
	rec := &l.record
	err = l.complete(ctx, rec)
	if errors.Is(err, idemstore.ErrStoreUnavailable) {
		err = l.completeAgain(ctx, rec, err)
	}
	switch {
	case errors.Is(err, idemstore.ErrNotOwner):
		return nil, l.superseded(ctx)
	case errors.Is(err, idemstore.ErrUnreplicated):
		l.unreplicated(ctx, resp, err)
	case err != nil:
		l.unstored(ctx, resp, err)
	}
	return resp, nil
}

// handlerContext returns ctx carrying the run's Info and its scope of
// derived keys and steps, for the handler. It is withInfo(ctx, &l.info)
// plus the scope, without allocating.
func (l *lease) handlerContext(ctx context.Context) context.Context {
	l.state.l = l
	l.scope.run = &l.state
	l.handlerCtx = infoCtx{Context: ctx, info: &l.info, scope: &l.scope}
	return &l.handlerCtx
}

// notStored returns why a run's answer (resp, err) is not stored, or nil
// when it is: the handler's error, no response, or a status that op's
// storage policy does not store. The lease is then released with it as the
// cause.
func notStored(op *idemop.Operation, resp *Response, err error) error {
	switch {
	case err != nil:
		return err
	case resp == nil:
		return errNoAnswer
	case !op.Stores(resp.Status):
		return fmt.Errorf("idem: status %d is not stored", resp.Status)
	}
	return nil
}

// Bounds of the backoff between completion attempts (completeAgain).
const (
	completeMinBackoff = 20 * time.Millisecond
	completeMaxBackoff = time.Second
)

// completeAgain retries a completion that failed with a store error (a
// failover, a timeout, scripts denied for a moment), so that a blip at the
// end of a run does not leave its key to run again. Between attempts it
// extends the lease as the heartbeat would (unless the heartbeat is off).
// It makes no attempt that would start after the lease lapses, nor one
// lock period after it began (an attempt that ends after the lapse is still
// refused if another run took the key over); it returns nil once the
// result is stored, idemstore.ErrNotOwner once the lease is lost (or once an attempt
// that failed on the way back had stored it after all: run then answers
// the stored result, as for a lost lease), else the last error. The client
// waits meanwhile: it is answered only after this.
func (l *lease) completeAgain(ctx context.Context, rec *idemstore.Record, err error) error {
	lock := opLock(l.k.op)
	giveUp := time.Now().Add(lock)
	backoff := completeMinBackoff
	for attempt := 2; ; attempt++ {
		if left := min(time.Until(l.extended.Add(lock)), time.Until(giveUp)); left <= backoff {
			return err
		}
		waitFor(context.Background(), backoff) // the client waits for the result, even one that hung up
		if !l.e.cfg.noHeartbeat && time.Since(l.extended) >= lock/3 {
			start := time.Now()
			switch xerr := l.extend(ctx, lock); {
			case xerr == nil:
				l.extended = start
			case errors.Is(xerr, idemstore.ErrNotOwner):
				return xerr
			}
		}
		err = l.storeResult(ctx, rec)
		ev := Event{Fence: l.info.Fence, Status: rec.Status, Err: err}
		switch {
		case err == nil:
			l.e.report(ctx, l.k, l.e.cfg.hooks.Completed, ev, levelInfo, fmt.Sprintf("idem: result stored at completion attempt %d", attempt))
			return nil
		case errors.Is(err, idemstore.ErrNotOwner):
			l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost before completion; result not stored")
			return err
		case !errors.Is(err, idemstore.ErrStoreUnavailable):
			return err
		}
		l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, 0, "")
		backoff = min(2*backoff, completeMaxBackoff)
	}
}

// unstored reports a storable response that could not be stored (the
// Unstored hook gets it) and marks it Idempotency-Degraded for its client:
// once the lease lapses, a retry runs the handler again.
func (l *lease) unstored(ctx context.Context, resp *Response, err error) {
	ev := Event{Fence: l.info.Fence, Status: resp.Status, Err: err, Response: resp}
	l.e.report(withInfo(ctx, &l.info), l.k, l.e.cfg.hooks.Unstored, ev, levelError,
		"idem: result not stored; the client gets it marked Idempotency-Degraded, and a retry after the lease lapses runs the handler again")
	markDegraded(resp)
}

// supersededError is returned by lease.run when the store refused the
// result because the lease had been taken over. acq is what the store
// answered for the same request afterwards (Replay, Conflict or Mismatch),
// or err the store's failure to answer; vacant is true when no other run
// held the key (the store gave this acquire the key, which was released:
// acq is then a conflict, so that the client's retry runs it).
type supersededError struct {
	acq    idemstore.Acquisition
	err    error
	vacant bool
}

// Error implements error.
func (e *supersededError) Error() string {
	if e.err != nil {
		return "idem: result not stored (lease taken over); " + e.err.Error()
	}
	return "idem: result not stored (lease taken over)"
}

// Unwrap returns the store's error, if any.
func (e *supersededError) Unwrap() error { return e.err }

// superseded asks the store once, with the same fingerprint, what the key
// holds now that this attempt's result was refused: the newer owner's
// result (Replay) or its live lease (Conflict). Should the record be gone
// or its lease expired again, the acquisition this makes is released at once
// and answered as a conflict, so that the client's retry runs the operation
// under a lease of its own.
func (l *lease) superseded(ctx context.Context) *supersededError {
	e, k := l.e, l.k
	req := e.acquireRequest(k, rand.Text()) // a new owner: a token of its own
	acq, tx, _, err := e.storeAcquire(ctx, k, req)
	if err != nil {
		e.report(ctx, k, e.cfg.hooks.StoreError, Event{Err: err}, levelError, "idem: acquire after a refused completion failed")
		return &supersededError{err: err}
	}
	switch acq.Outcome {
	case idemstore.OutcomeFirstRun, idemstore.OutcomeRecovered:
		nl := &lease{e: e, k: k, token: req.Token, info: Info{Key: k.key, Operation: k.op.ID, Fence: acq.Fence}, tx: tx}
		nl.release(ctx, errSuperseded)
		return &supersededError{acq: idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: time.Second}, vacant: true}
	case idemstore.OutcomeReplay:
		e.report(ctx, k, e.cfg.hooks.Replayed, Event{Status: acq.Record.Status}, 0, "")
	}
	return &supersededError{acq: acq}
}

var (
	errPanicked   = errors.New("idem: handler panicked")
	errNoAnswer   = errors.New("idem: handler gave no answer")
	errHijacked   = errors.New("idem: handler hijacked the connection")
	errSuperseded = errors.New("idem: lease taken only to answer a superseded attempt")
)

// complete stores rec. A lost lease (idemstore.ErrNotOwner) or a store error is
// reported through hooks and the logger, and returned.
func (l *lease) complete(ctx context.Context, rec *idemstore.Record) error {
	err := l.storeResult(ctx, rec)
	ev := Event{Fence: l.info.Fence, Status: rec.Status, Err: err}
	switch {
	case err == nil:
		l.e.report(ctx, l.k, l.e.cfg.hooks.Completed, ev, 0, "")
	case errors.Is(err, idemstore.ErrUnreplicated):
		// Stored: run reports it (lease.unreplicated).
	case errors.Is(err, idemstore.ErrNotOwner):
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost before completion; result not stored")
	default:
		l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: complete failed")
	}
	return err
}

// storeResult is one Complete call of the store, bracketed by the
// StoreCall hook.
func (l *lease) storeResult(ctx context.Context, rec *idemstore.Record) error {
	sctx, s := l.startCall(ctx, "complete")
	err := l.e.store.Complete(l.e.deadlines.ContextIn(&l.completeCtx, sctx), l.k.storageKey, l.token, rec, opRetention(l.k.op))
	s.done(Event{Status: rec.Status, Err: err})
	return err
}

// release deletes the lease so that a retry runs again; cause says why. A
// claim held by a TxStore's transaction is released by rolling it back.
func (l *lease) release(ctx context.Context, cause error) {
	if l.tx != nil {
		l.rollback(ctx, cause) // txstore.go
		return
	}
	sctx, s := l.startCall(ctx, "release")
	err := l.e.store.Release(l.e.deadlines.Context(sctx), l.k.storageKey, l.token)
	s.done(Event{Err: err})
	ev := Event{Fence: l.info.Fence, Err: err}
	switch {
	case err == nil:
		ev.Err = cause
		l.e.report(ctx, l.k, l.e.cfg.hooks.Released, ev, 0, "")
	case errors.Is(err, idemstore.ErrNotOwner):
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost before release")
	default:
		l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: release failed")
	}
}

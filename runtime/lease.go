package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Backoff bounds of a duplicate waiting for the original (Operation.Wait).
const (
	waitMinBackoff = 10 * time.Millisecond
	waitMaxBackoff = 250 * time.Millisecond
)

// target is a request identified for the store: its operation, the client's
// key, the composed storage key and the fingerprint.
type target struct {
	op          *Operation
	key         string // the client's key
	storageKey  string
	fingerprint string
}

// lease is an in-progress record this attempt owns.
type lease struct {
	e     *Engine
	t     *target
	token string
	info  Info
	hb    heartbeat // while run runs fn
}

// acquire runs the acquire transition for t. While the original runs it
// polls, with backoff, for up to t.op.Wait (or until ctx ends) before
// giving up with the conflict. It returns the lease when this attempt owns
// the record (Proceed or Recovered), and an error wrapping
// ErrStoreUnavailable when the store fails.
func (e *Engine) acquire(ctx context.Context, t *target) (*lease, Acquisition, error) {
	req := AcquireRequest{Key: t.storageKey, Token: rand.Text(), Fingerprint: t.fingerprint, Lease: t.op.lock()}
	var ev Event
	var deadline time.Time
	if t.op.Wait > 0 {
		deadline = time.Now().Add(t.op.Wait)
	}
	backoff := waitMinBackoff
	for {
		acq, err := e.storeAcquire(ctx, req)
		if err != nil {
			ev.Err = err
			if ctx.Err() == nil {
				e.report(ctx, t, e.cfg.hooks.StoreError, ev, levelError, "idem: acquire failed")
			}
			return nil, Acquisition{}, err
		}
		switch acq.Outcome {
		case OutcomeProceed, OutcomeRecovered:
			ev.Fence = acq.Fence
			recovered := acq.Outcome == OutcomeRecovered
			if recovered {
				e.report(ctx, t, e.cfg.hooks.Recovered, ev, levelInfo, "idem: stale lease taken over")
			} else {
				e.report(ctx, t, e.cfg.hooks.Acquired, ev, 0, "")
			}
			info := Info{Key: t.key, Operation: t.op.ID, Fence: acq.Fence, Recovered: recovered}
			return &lease{e: e, t: t, token: req.Token, info: info}, acq, nil
		case OutcomeReplay:
			ev.Status = acq.Record.Status
			e.report(ctx, t, e.cfg.hooks.Replayed, ev, 0, "")
			return nil, acq, nil
		case OutcomeMismatch:
			e.report(ctx, t, e.cfg.hooks.Mismatch, ev, 0, "")
			return nil, acq, nil
		}
		// OutcomeConflict: wait for the original if allowed.
		left := time.Until(deadline)
		if left <= 0 || !waitFor(ctx, min(backoff, left, max(acq.Remaining, time.Millisecond))) {
			ev.Remaining = acq.Remaining
			e.report(ctx, t, e.cfg.hooks.Conflict, ev, 0, "")
			return nil, acq, nil
		}
		backoff = min(2*backoff, waitMaxBackoff)
	}
}

// storeAcquire calls Store.Acquire bounded by the store timeout and checks
// the answer's shape. Like every store call it is detached from the
// request's cancellation: a script cut off once sent may still have created
// the record, which would then have no owner to complete or release it
// until its lease ran out. (It also spares the request's context a child:
// the first child allocates its done channel and child set.)
func (e *Engine) storeAcquire(ctx context.Context, req AcquireRequest) (Acquisition, error) {
	acq, err := e.store.Acquire(e.deadlines.context(ctx), req)
	if err != nil {
		if errors.Is(err, ErrStoreUnavailable) {
			return acq, err
		}
		return acq, fmt.Errorf("%w: acquire: %w", ErrStoreUnavailable, err)
	}
	switch acq.Outcome {
	case OutcomeProceed, OutcomeRecovered, OutcomeConflict, OutcomeMismatch:
		return acq, nil
	case OutcomeReplay:
		if acq.Record != nil {
			return acq, nil
		}
	}
	return acq, fmt.Errorf("%w: acquire: malformed answer (outcome %d)", ErrStoreUnavailable, acq.Outcome)
}

// waitFor waits d with a timer; it reports false if ctx ended first.
func waitFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
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
	l.startHeartbeat(ctx)
	settled := false
	defer func() {
		if !settled { // fn panicked: release and let the panic continue
			l.stopHeartbeat()
			l.release(ctx, errPanicked)
		}
	}()
	resp, err := fn(withInfo(ctx, &l.info))
	settled = true
	l.stopHeartbeat()
	switch {
	case err != nil:
		l.release(ctx, err)
		return nil, err
	case resp == nil:
		l.release(ctx, errNoAnswer)
		return nil, nil
	case !storable(resp.Status):
		l.release(ctx, fmt.Errorf("idem: status %d is not stored", resp.Status))
		return resp, nil
	}
	if err := l.complete(ctx, newRecord(resp, l.e.allow, l.e.cfg.storedBodyLimit)); errors.Is(err, ErrNotOwner) {
		return nil, l.superseded(ctx)
	}
	return resp, nil
}

// supersededError is returned by lease.run when the store refused the
// result because the lease had been taken over. acq is what the store
// answered for the same request afterwards (Replay, Conflict or Mismatch),
// or err the store's failure to answer.
type supersededError struct {
	acq Acquisition
	err error
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

// response is the HTTP answer: the newer run's stored result, 409 while it
// runs, 422 if the key now holds another request, 503 on a store error.
func (e *supersededError) response() *Response {
	if e.err != nil {
		return storeUnavailableProblem().Response()
	}
	return storedAnswer(e.acq)
}

// storedAnswer is the HTTP answer to an acquisition that did not give this
// attempt the lease.
func storedAnswer(acq Acquisition) *Response {
	switch acq.Outcome {
	case OutcomeReplay:
		return replayResponse(acq.Record)
	case OutcomeMismatch:
		return mismatchProblem().Response()
	}
	return conflictProblem(acq.Remaining).Response()
}

// superseded asks the store once, with the same fingerprint, what the key
// holds now that this attempt's result was refused: the newer owner's
// result (Replay) or its live lease (Conflict). Should the record be gone
// or its lease expired again, the acquisition this makes is released at once
// and answered as a conflict, so that the client's retry runs the operation
// under a lease of its own.
func (l *lease) superseded(ctx context.Context) *supersededError {
	e, t := l.e, l.t
	req := AcquireRequest{Key: t.storageKey, Token: rand.Text(), Fingerprint: t.fingerprint, Lease: t.op.lock()}
	acq, err := e.storeAcquire(ctx, req)
	if err != nil {
		e.report(ctx, t, e.cfg.hooks.StoreError, Event{Err: err}, levelError, "idem: acquire after a refused completion failed")
		return &supersededError{err: err}
	}
	switch acq.Outcome {
	case OutcomeProceed, OutcomeRecovered:
		nl := &lease{e: e, t: t, token: req.Token, info: Info{Key: t.key, Operation: t.op.ID, Fence: acq.Fence}}
		nl.release(ctx, errSuperseded)
		return &supersededError{acq: Acquisition{Outcome: OutcomeConflict, Remaining: time.Second}}
	case OutcomeReplay:
		e.report(ctx, t, e.cfg.hooks.Replayed, Event{Status: acq.Record.Status}, 0, "")
	}
	return &supersededError{acq: acq}
}

var (
	errPanicked   = errors.New("idem: handler panicked")
	errNoAnswer   = errors.New("idem: handler gave no answer")
	errSuperseded = errors.New("idem: lease taken only to answer a superseded attempt")
)

// complete stores rec. A lost lease (ErrNotOwner) or a store error is
// reported through hooks and the logger, and returned.
func (l *lease) complete(ctx context.Context, rec *Record) error {
	err := l.e.store.Complete(l.e.deadlines.context(ctx), l.t.storageKey, l.token, rec, l.t.op.retention())
	ev := Event{Fence: l.info.Fence, Status: rec.Status, Err: err}
	switch {
	case err == nil:
		l.e.report(ctx, l.t, l.e.cfg.hooks.Completed, ev, 0, "")
	case errors.Is(err, ErrNotOwner):
		l.e.report(ctx, l.t, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost before completion; result not stored")
	default:
		l.e.report(ctx, l.t, l.e.cfg.hooks.StoreError, ev, levelError, "idem: complete failed")
	}
	return err
}

// release deletes the lease so that a retry runs again; cause says why.
func (l *lease) release(ctx context.Context, cause error) {
	err := l.e.store.Release(l.e.deadlines.context(ctx), l.t.storageKey, l.token)
	ev := Event{Fence: l.info.Fence, Err: err}
	switch {
	case err == nil:
		ev.Err = cause
		l.e.report(ctx, l.t, l.e.cfg.hooks.Released, ev, 0, "")
	case errors.Is(err, ErrNotOwner):
		l.e.report(ctx, l.t, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost before release")
	default:
		l.e.report(ctx, l.t, l.e.cfg.hooks.StoreError, ev, levelError, "idem: release failed")
	}
}

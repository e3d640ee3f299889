package idem

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// The protocol is written once, in protect; Serve, ServeStrict,
// ServeRequest and Do are adapters that identify a request their way and
// translate the outcome.

// outcome is how the protocol ended for one identified request.
type outcome struct {
	kind outcomeKind
	resp *Response             // ran: the handler's response (stored when storable)
	acq  idemstore.Acquisition // answered: a replay, a conflict or a mismatch
	wait time.Duration         // answered with a conflict: its Retry-After (Engine.conflictRetryAfter)
	err  error                 // ran: the handler's error; unavailable, misconfigured, uncommitted: the store's; unreconciled: the reconciler's; cancelled: the request's
}

// outcomeKind tells the outcomes apart.
type outcomeKind uint8

const (
	ran           outcomeKind = iota // the handler ran as the lease's owner
	answered                         // the store answered for the key instead: acq
	unavailable                      // the store failed, and the engine fails closed
	misconfigured                    // the store cannot keep the promise (ErrStoreMisconfigured): closed even with fail-open
	degraded                         // the store failed, and fail-open lets the handler run unprotected
	cancelled                        // the request ended while its key was acquired; the lease was released
	unreconciled                     // the reconciler refused to let a recovered lease run again
	uncommitted                      // an idemstore.TxStore's run ran but did not commit (txstore.go)
)

// protect runs the protocol for k: acquire the key, then, as the lease's
// owner, run fn (with the heartbeat on and Info in its context) and settle
// the record (see lease.run); or return what the store answered instead.
// r, with raw as its body when not nil, is what a reconciler sees; r is nil
// for Do. protect never runs fn for a degraded outcome: the adapter does.
func (e *Engine) protect(ctx context.Context, k *keyedRequest, r *http.Request, raw []byte, fn func(context.Context) (*Response, error)) outcome {
	l, acq, err := e.acquire(ctx, k)
	switch {
	case errors.Is(err, idemstore.ErrStoreMisconfigured):
		// Fail-open covers a store that is down for a moment, not one set
		// up to lose records or to refuse the scripts: the handler never
		// runs on it.
		return outcome{kind: misconfigured, err: err}
	case err != nil && e.cfg.failOpen:
		return outcome{kind: degraded, err: err}
	case err != nil:
		return outcome{kind: unavailable, err: err}
	case l == nil:
		return e.answered(k, acq)
	}
	if err := ctx.Err(); err != nil {
		// The request ended while its key was being acquired (acquire is
		// not cut off, see storeAcquire): give the lease back rather than
		// run a handler nobody waits for.
		l.release(ctx, err)
		return outcome{kind: cancelled, err: err}
	}
	began := l.extended // read as the acquire began: one clock reading less
	if l.info.Recovered && e.cfg.reconciler != nil {
		if r != nil && raw != nil {
			r = withBody(ctx, r, raw)
		}
		if err := l.reconcile(ctx, r); err != nil {
			return outcome{kind: unreconciled, err: err}
		}
		began = time.Now()
	}
	resp, err := l.run(ctx, e.timedHandler(k, l.info.Fence, fn))
	e.runs.Observe(k.op, time.Since(began))
	if err == nil {
		return outcome{kind: ran, resp: resp} // without the targets of errors.As below, which escape
	}
	var s *supersededError
	if errors.As(err, &s) {
		// The lease was taken over while fn ran: its result is not stored,
		// so answer what is (see lease.run).
		switch {
		case errors.Is(s.err, idemstore.ErrStoreMisconfigured):
			return outcome{kind: misconfigured, err: s.err}
		case s.err != nil:
			return outcome{kind: unavailable, err: s.err}
		}
		return e.answered(k, s.acq)
	}
	var u *uncommittedError
	if errors.As(err, &u) { // an idemstore.TxStore's run that did not commit (txstore.go)
		return outcome{kind: uncommitted, err: u.err}
	}
	return outcome{kind: ran, resp: resp, err: err}
}

// answered is the outcome of an acquisition that did not give this attempt
// the lease.
func (e *Engine) answered(k *keyedRequest, acq idemstore.Acquisition) outcome {
	o := outcome{kind: answered, acq: acq}
	if acq.Outcome == idemstore.OutcomeConflict {
		o.wait = e.conflictRetryAfter(k.op, acq.Remaining)
	}
	return o
}

// problem is the HTTP answer to an outcome in which the handler did not
// run: a replay, 409, 422 or a 503; nil for ran and degraded, which the
// adapters answer themselves.
func (o outcome) problem() *Response {
	switch o.kind {
	case answered:
		return storedAnswer(o.acq, o.wait)
	case unavailable:
		return storeUnavailableProblem().Response()
	case misconfigured:
		return storeMisconfiguredProblem().Response()
	case uncommitted:
		return uncommittedProblem(o.err).Response()
	case cancelled:
		return cancelledProblem().Response()
	case unreconciled:
		var p *Problem
		if errors.As(o.err, &p) {
			return p.Response()
		}
		p = problemf(http.StatusServiceUnavailable, idemop.CodeReconcileFailed,
			"the previous attempt with this key was interrupted and could not be reconciled; retry later")
		p.RetryAfter = time.Second
		return p.Response()
	}
	return nil
}

// storedAnswer is the HTTP answer to an acquisition that did not give this
// attempt the lease; a conflict's Retry-After is wait.
func storedAnswer(acq idemstore.Acquisition, wait time.Duration) *Response {
	switch acq.Outcome {
	case idemstore.OutcomeReplay:
		return replayResponse(acq.Record)
	case idemstore.OutcomeMismatch:
		return mismatchProblem().Response()
	}
	return conflictProblem(wait).Response()
}

// conflictRetryAfter is the Retry-After of a 409 for op whose original's
// lease has remaining left: the estimated run time (how long the original
// as a whole takes; how long it has run already is unknown, and may be in
// another process), at most the remaining lease (it is over by then, done
// or taken over) and at least 1s. Without an estimate (no run of op in this
// process yet) it is 1s: an early retry costs one more 409, which by then
// may carry an estimate.
func (e *Engine) conflictRetryAfter(op *idemop.Operation, remaining time.Duration) time.Duration {
	return max(min(e.runs.Estimate(op), remaining), time.Second)
}

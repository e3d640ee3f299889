package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Backoff bounds of a duplicate waiting for the original (Operation.Wait).
const (
	waitMinBackoff = 10 * time.Millisecond
	waitMaxBackoff = 250 * time.Millisecond
)

// acquire runs the acquire transition for k. While the original runs it
// polls, with backoff, for up to k.op.Wait (or until ctx ends) before
// giving up with the conflict. It returns the lease when this attempt owns
// the record (FirstRun or Recovered), and an error wrapping
// ErrStoreUnavailable when the store fails.
func (e *Engine) acquire(ctx context.Context, k *keyedRequest) (*lease, idemstore.Acquisition, error) {
	req := e.acquireRequest(k, k.token)
	var ev Event
	var deadline time.Time
	if k.op.Wait > 0 {
		deadline = time.Now().Add(k.op.Wait)
	}
	backoff := waitMinBackoff
	for {
		acq, tx, sent, err := e.storeAcquire(ctx, k, req)
		if err != nil {
			ev.Err = err
			switch {
			case errors.Is(err, idemstore.ErrStoreMisconfigured):
				e.report(ctx, k, e.cfg.hooks.StoreError, ev, 0, "")
				e.logMisconfigured(ctx, err)
			case ctx.Err() == nil:
				e.report(ctx, k, e.cfg.hooks.StoreError, ev, levelError, "idem: acquire failed")
			}
			return nil, idemstore.Acquisition{}, err
		}
		if e.misconfigured.Load() != nil {
			e.logMisconfigured(ctx, nil)
		}
		switch acq.Outcome {
		case idemstore.OutcomeFirstRun, idemstore.OutcomeRecovered:
			ev.Fence = acq.Fence
			recovered := acq.Outcome == idemstore.OutcomeRecovered
			if recovered {
				e.report(ctx, k, e.cfg.hooks.Recovered, ev, levelInfo, "idem: stale lease taken over")
			} else {
				e.report(ctx, k, e.cfg.hooks.FirstRun, ev, 0, "")
			}
			e.named(k)
			info := Info{Key: k.key, Operation: k.op.ID, Fence: acq.Fence, Recovered: recovered}
			l := k.newLease()
			l.e, l.k, l.token, l.info, l.extended, l.tx = e, k, req.Token, info, sent, tx
			return l, acq, nil
		case idemstore.OutcomeReplay:
			ev.Status = acq.Record.Status
			e.report(ctx, k, e.cfg.hooks.Replayed, ev, 0, "")
			return nil, acq, nil
		case idemstore.OutcomeMismatch:
			e.report(ctx, k, e.cfg.hooks.Mismatch, ev, 0, "")
			return nil, acq, nil
		}
		// idemstore.OutcomeConflict: wait for the original if allowed.
		left := time.Until(deadline)
		if left <= 0 || !waitFor(ctx, min(backoff, left, max(acq.Remaining, time.Millisecond))) {
			ev.Remaining = acq.Remaining
			e.report(ctx, k, e.cfg.hooks.Conflict, ev, 0, "")
			return nil, acq, nil
		}
		backoff = min(2*backoff, waitMaxBackoff)
	}
}

// logMisconfigured logs, once per change, that the store is misconfigured
// (err, which says what to change) or, with err nil, that it works again.
func (e *Engine) logMisconfigured(ctx context.Context, err error) {
	if err == nil {
		if e.misconfigured.Swap(nil) != nil {
			e.cfg.logger.LogAttrs(ctx, levelInfo, "idem: store configuration verified; idempotent requests run again")
		}
		return
	}
	msg := err.Error()
	if last := e.misconfigured.Load(); last != nil && *last == msg {
		return
	}
	if last := e.misconfigured.Swap(&msg); last != nil && *last == msg {
		return // another request logged it meanwhile
	}
	e.cfg.logger.LogAttrs(ctx, levelError,
		"idem: store misconfigured; idempotent requests are answered 503 store-misconfigured and their handlers do not run until it is fixed",
		slog.Any("err", err))
}

// storeAcquire calls Store.Acquire bounded by the store timeout and checks
// the answer's shape (see checkAcquisition), within the StoreCall hook.
// Like every store call it is detached from the request's cancellation: a
// script cut off once sent may still have created the record, which would
// then have no owner to complete or release it until its lease ran out.
// (It also spares the request's context a child: the first child allocates
// its done channel and child set.) sent is when the call began: a lease
// the store grants is taken after it. For an idemstore.TxStore it calls
// AcquireRun instead, and tx is the open transaction that holds the claim
// of a FirstRun or Recovered answer (nil otherwise).
func (e *Engine) storeAcquire(ctx context.Context, k *keyedRequest, req idemstore.AcquireRequest) (acq idemstore.Acquisition, tx idemstore.RunTx, sent time.Time, err error) {
	sctx, s := e.startStep(ctx, k, e.cfg.hooks.StoreCall, "acquire", 0)
	cctx, sent := e.deadlines.ContextNow(&k.acquireCtx, sctx)
	if ts, ok := e.store.(idemstore.TxStore); ok {
		acq, tx, err = ts.AcquireRun(cctx, req)
		acq, tx, err = checkRun(ctx, acq, tx, err)
	} else {
		acq, err = checkAcquisition(e.store.Acquire(cctx, req))
	}
	s.done(Event{Outcome: acq.Outcome, Fence: acq.Fence, Err: err})
	return acq, tx, sent, err
}

// checkRun checks a TxStore's AcquireRun answer as checkAcquisition does
// Acquire's, and that it returned an open transaction exactly when it
// claimed the key; a transaction returned with another answer is rolled
// back.
func checkRun(ctx context.Context, acq idemstore.Acquisition, tx idemstore.RunTx, err error) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, err = checkAcquisition(acq, err)
	claimed := err == nil && (acq.Outcome == idemstore.OutcomeFirstRun || acq.Outcome == idemstore.OutcomeRecovered)
	switch {
	case claimed && tx == nil:
		return idemstore.Acquisition{}, nil, fmt.Errorf("%w: acquire: malformed answer (outcome %d without its transaction)", idemstore.ErrStoreUnavailable, acq.Outcome)
	case !claimed && tx != nil:
		_ = tx.Rollback(context.WithoutCancel(ctx))
		if err == nil {
			err = fmt.Errorf("%w: acquire: malformed answer (outcome %d with a transaction)", idemstore.ErrStoreUnavailable, acq.Outcome)
		}
		return idemstore.Acquisition{}, nil, err
	}
	return acq, tx, err
}

// checkAcquisition wraps a failed acquire's error in ErrStoreUnavailable,
// and turns an answer of the wrong shape into such an error.
func checkAcquisition(acq idemstore.Acquisition, err error) (idemstore.Acquisition, error) {
	if err != nil {
		if errors.Is(err, idemstore.ErrStoreUnavailable) {
			return idemstore.Acquisition{}, err
		}
		return idemstore.Acquisition{}, fmt.Errorf("%w: acquire: %w", idemstore.ErrStoreUnavailable, err)
	}
	switch acq.Outcome {
	case idemstore.OutcomeFirstRun, idemstore.OutcomeRecovered, idemstore.OutcomeConflict, idemstore.OutcomeMismatch:
		return acq, nil
	case idemstore.OutcomeReplay:
		if acq.Record != nil {
			return acq, nil
		}
	}
	return idemstore.Acquisition{}, fmt.Errorf("%w: acquire: malformed answer (outcome %d)", idemstore.ErrStoreUnavailable, acq.Outcome)
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

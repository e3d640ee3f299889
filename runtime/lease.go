package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrStoreUnavailable is returned (wrapping the store's error) when the
// store cannot be reached.
var ErrStoreUnavailable = errors.New("idem: store unavailable")

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

// event returns the base event for t.
func (t *target) event() Event {
	return Event{Operation: t.op.ID, KeyHash: keyHash(t.storageKey)}
}

// lease is an in-progress record this attempt owns.
type lease struct {
	e     *Engine
	t     *target
	token string
	info  Info
}

// acquire runs the acquire transition for t. While the original runs it
// polls, with backoff, for up to t.op.Wait (or until ctx ends) before
// giving up with the conflict. It returns the lease when this attempt owns
// the record (Proceed or Recovered), and an error wrapping
// ErrStoreUnavailable when the store fails.
func (e *Engine) acquire(ctx context.Context, t *target) (*lease, Acquisition, error) {
	req := AcquireRequest{Key: t.storageKey, Token: rand.Text(), Fingerprint: t.fingerprint, Lease: t.op.lock()}
	ev := t.event()
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
				call(ctx, e.cfg.hooks.StoreError, ev)
				e.cfg.logger.LogAttrs(ctx, levelError, "idem: acquire failed", logAttrs(ev)...)
			}
			return nil, Acquisition{}, err
		}
		switch acq.Outcome {
		case OutcomeProceed, OutcomeRecovered:
			ev.Fence = acq.Fence
			recovered := acq.Outcome == OutcomeRecovered
			if recovered {
				call(ctx, e.cfg.hooks.Recovered, ev)
				e.cfg.logger.LogAttrs(ctx, levelInfo, "idem: stale lease taken over", logAttrs(ev)...)
			} else {
				call(ctx, e.cfg.hooks.Acquired, ev)
			}
			info := Info{Key: t.key, Operation: t.op.ID, Fence: acq.Fence, Recovered: recovered}
			return &lease{e: e, t: t, token: req.Token, info: info}, acq, nil
		case OutcomeReplay:
			ev.Status = acq.Record.Status
			call(ctx, e.cfg.hooks.Replayed, ev)
			return nil, acq, nil
		case OutcomeMismatch:
			call(ctx, e.cfg.hooks.Mismatch, ev)
			return nil, acq, nil
		}
		// OutcomeConflict: wait for the original if allowed.
		left := time.Until(deadline)
		if left <= 0 || !waitFor(ctx, min(backoff, left, max(acq.Remaining, time.Millisecond))) {
			ev.Remaining = acq.Remaining
			call(ctx, e.cfg.hooks.Conflict, ev)
			return nil, acq, nil
		}
		backoff = min(2*backoff, waitMaxBackoff)
	}
}

// storeAcquire calls Store.Acquire bounded by the store timeout and checks
// the answer's shape.
func (e *Engine) storeAcquire(ctx context.Context, req AcquireRequest) (Acquisition, error) {
	sctx, cancel := context.WithTimeout(ctx, e.cfg.storeTimeout)
	defer cancel()
	acq, err := e.store.Acquire(sctx, req)
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
	if err := l.e.cfg.reconciler(withInfo(ctx, l.info), l.info, r); err != nil {
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
func (l *lease) run(ctx context.Context, fn func(context.Context) (*Response, error)) (*Response, error) {
	stop := l.heartbeat(ctx)
	settled := false
	defer func() {
		if !settled { // fn panicked: release and let the panic continue
			stop()
			l.release(ctx, errPanicked)
		}
	}()
	resp, err := fn(withInfo(ctx, l.info))
	settled = true
	stop()
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
	l.complete(ctx, newRecord(resp, l.e.allow, l.e.cfg.storedBodyLimit))
	return resp, nil
}

var (
	errPanicked = errors.New("idem: handler panicked")
	errNoAnswer = errors.New("idem: handler gave no answer")
)

// detached returns a context for settling the record: not cancelled with the
// request, bounded by the store timeout.
func (l *lease) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), l.e.cfg.storeTimeout)
}

// complete stores rec. A lost lease (ErrNotOwner) or a store error is
// reported through hooks and the logger; the caller still answers its
// client.
func (l *lease) complete(ctx context.Context, rec *Record) {
	sctx, cancel := l.detached(ctx)
	defer cancel()
	err := l.e.store.Complete(sctx, l.t.storageKey, l.token, rec, l.t.op.retention())
	ev := l.t.event()
	ev.Fence, ev.Status, ev.Err = l.info.Fence, rec.Status, err
	switch {
	case err == nil:
		call(ctx, l.e.cfg.hooks.Completed, ev)
	case errors.Is(err, ErrNotOwner):
		call(ctx, l.e.cfg.hooks.LeaseLost, ev)
		l.e.cfg.logger.LogAttrs(ctx, levelWarn, "idem: lease lost before completion; result not stored", logAttrs(ev)...)
	default:
		call(ctx, l.e.cfg.hooks.StoreError, ev)
		l.e.cfg.logger.LogAttrs(ctx, levelError, "idem: complete failed", logAttrs(ev)...)
	}
}

// release deletes the lease so that a retry runs again; cause says why.
func (l *lease) release(ctx context.Context, cause error) {
	sctx, cancel := l.detached(ctx)
	defer cancel()
	err := l.e.store.Release(sctx, l.t.storageKey, l.token)
	ev := l.t.event()
	ev.Fence = l.info.Fence
	switch {
	case err == nil:
		ev.Err = cause
		call(ctx, l.e.cfg.hooks.Released, ev)
	case errors.Is(err, ErrNotOwner):
		ev.Err = err
		call(ctx, l.e.cfg.hooks.LeaseLost, ev)
		l.e.cfg.logger.LogAttrs(ctx, levelWarn, "idem: lease lost before release", logAttrs(ev)...)
	default:
		ev.Err = err
		call(ctx, l.e.cfg.hooks.StoreError, ev)
		l.e.cfg.logger.LogAttrs(ctx, levelError, "idem: release failed", logAttrs(ev)...)
	}
}

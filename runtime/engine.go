package idem

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"
)

// Engine runs the idempotency protocol for HTTP requests. It is safe for
// concurrent use. Generated code creates one per WithIdempotency or
// IdempotencyMiddleware call.
type Engine struct {
	store     Store
	cfg       config
	allow     []string        // canonical names of the headers stored for replay
	deadlines *storeDeadlines // the contexts of store calls
}

// NewEngine returns an engine over store configured by opts. It panics if
// store is nil.
func NewEngine(store Store, opts ...Option) *Engine {
	if store == nil {
		panic("idem: NewEngine: nil store")
	}
	cfg := newConfig(opts)
	return &Engine{store: store, cfg: cfg, allow: replayAllowList(cfg.replayHeaders), deadlines: newStoreDeadlines(cfg.storeTimeout)}
}

// Serve runs next under the idempotency protocol for op: it reads and bounds
// the body (restoring r.Body for next), fingerprints the request, acquires
// the key, runs next with a buffering recorder and a context carrying the
// key and fence, stores the result and then writes it; or answers a replay,
// 400, 409, 413, 422 or 503 itself. Used by the generated ServerInterface
// decorator.
func (e *Engine) Serve(w http.ResponseWriter, r *http.Request, op *Operation, next http.HandlerFunc) {
	t, raw, prob := e.identifyHTTP(r, op)
	switch {
	case prob != nil:
		_ = prob.Response().Write(w)
		return
	case t == nil: // optional key, none sent: unprotected
		next(w, withBody(r.Context(), r, raw))
		return
	}
	l, replay, resp, degraded := e.begin(r.Context(), t, r, raw)
	switch {
	case replay != nil:
		_ = writeReplay(w, replay)
		return
	case resp != nil:
		_ = resp.Write(w)
		return
	case degraded:
		w.Header().Set(HeaderDegraded, "true")
		next(w, withBody(r.Context(), r, raw))
		return
	}
	resp, err := l.run(r.Context(), func(ctx context.Context) (*Response, error) {
		rec := newRecorder(w)
		next(rec, withBody(ctx, r, raw))
		if !rec.answered() && ctx.Err() != nil {
			return nil, ctx.Err() // cancelled before it answered: release
		}
		return rec.response(), nil
	})
	if s, ok := errors.AsType[*supersededError](err); ok {
		// The lease was taken over while next ran: its result is not stored,
		// so answer what is (see lease.run).
		resp, err = s.response(), nil
	}
	if err != nil || resp == nil {
		_ = cancelledProblem().Response().Write(w)
		return
	}
	_ = resp.Write(w)
}

// withBody returns a shallow copy of r with ctx and, when raw is not nil
// (the engine read the body), a fresh reader over raw as its body.
func withBody(ctx context.Context, r *http.Request, raw []byte) *http.Request {
	r = r.WithContext(ctx)
	if raw != nil {
		body := &bodyReader{}
		body.Reset(raw)
		r.Body, r.ContentLength = body, int64(len(raw))
	}
	return r
}

// bodyReader is a request body over bytes already read: io.NopCloser and
// bytes.NewReader in one allocation.
type bodyReader struct{ bytes.Reader }

// Close implements io.Closer.
func (*bodyReader) Close() error { return nil }

// begin acquires t for an HTTP request. It returns the owned lease; or the
// stored record to replay; or the response to answer instead (409, 422,
// 503); or degraded when the store failed and fail-open lets the handler
// run unprotected. r, with raw as its body when not nil, is what a
// reconciler sees.
func (e *Engine) begin(ctx context.Context, t *target, r *http.Request, raw []byte) (l *lease, replay *Record, resp *Response, degraded bool) {
	l, acq, err := e.acquire(ctx, t)
	switch {
	case err != nil && e.cfg.failOpen:
		return nil, nil, nil, true
	case err != nil:
		return nil, nil, storeUnavailableProblem().Response(), false
	case l == nil && acq.Outcome == OutcomeReplay:
		return nil, acq.Record, nil, false
	case l == nil:
		return nil, nil, storedAnswer(acq), false
	}
	if err := ctx.Err(); err != nil {
		// The request ended while its key was being acquired (acquire is
		// not cut off, see storeAcquire): give the lease back rather than
		// run a handler nobody waits for.
		l.release(ctx, err)
		return nil, nil, cancelledProblem().Response(), false
	}
	if l.info.Recovered && e.cfg.reconciler != nil && raw != nil {
		r = withBody(ctx, r, raw)
	}
	if err := l.reconcile(ctx, r); err != nil {
		if p, ok := errors.AsType[*Problem](err); ok {
			return nil, nil, p.Response(), false
		}
		p := problemf(http.StatusServiceUnavailable, CodeReconcileFailed,
			"the previous attempt with this key was interrupted and could not be reconciled; retry later")
		p.RetryAfter = time.Second
		return nil, nil, p.Response(), false
	}
	return l, nil, nil, false
}

// Middleware is the hand-wired form of Serve for routes that are not
// generated: the standard func(http.Handler) http.Handler shape.
func (e *Engine) Middleware(op Operation) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.Serve(w, r, &op, next.ServeHTTP)
		})
	}
}

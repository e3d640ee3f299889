package idem

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/beat"
	"github.com/idemgen/idemgen/runtime/internal/deadline"
	"github.com/idemgen/idemgen/runtime/internal/ewma"
)

// Engine runs the idempotency protocol for HTTP requests. It is safe for
// concurrent use. Generated code creates one per WithIdempotency or
// NewStrictHandlerWithIdempotency call.
type Engine struct {
	store     idemstore.Store
	cfg       config
	allow     []string                          // canonical names of the headers stored for replay
	deadlines *deadline.Shared                  // the contexts of store calls
	runs      ewma.Durations[*idemop.Operation] // how long a run of each operation takes, for a 409's Retry-After
	beats     beat.Scheduler                    // the heartbeats of the leases held
	tokens    sync.Map                          // operation ID -> *opName
	namer     idemstore.OperationNamer

	// misconfigured is the message of the store misconfiguration logged
	// last, nil while the store works: the log says why requests are
	// refused once per change, not once per request.
	misconfigured atomic.Pointer[string]
	// unreplicatedLog keeps a replica that is down from logging a line
	// per request (lease.unreplicated).
	unreplicatedLog burstLog
}

// NewEngine returns an engine over store configured by opts. It panics if
// store is nil, or a nil pointer of a store type (a *redisstore.Store
// declared and never assigned), or if opts contradict each other or lack what one of them
// needs (WithScopeFromHeader without WithScopeSecret), with a message that
// says what to change: these are start-up failures, like
// regexp.MustCompile's.
func NewEngine(store idemstore.Store, opts ...Option) *Engine {
	if msg := nilStore(store); msg != "" {
		panic(msg)
	}
	cfg := newConfig(opts)
	if msg := cfg.checkScope(); msg != "" {
		panic(msg)
	}
	e := &Engine{store: store, cfg: cfg, allow: replayAllowList(cfg.replayHeaders), deadlines: deadline.New(cfg.storeTimeout)}
	e.namer, _ = store.(idemstore.OperationNamer)
	return e
}

// nilStore returns the panic message for a store that is nil, or a nil
// pointer (or other nil value) of a store type, which would only fail at
// the first request; "" for a store. The generated constructors
// (WithIdempotency, NewStrictHandlerWithIdempotency, WithIdempotentWebhooks)
// and Do pass their store here, so the message names them too.
func nilStore(store idemstore.Store) string {
	const what = "pass a store built by its constructor (redisstore.New(rdb), pgstore.New(pool), mysqlstore.New(db), or memstore.New() for tests) to idem.NewEngine, idem.Do or the generated WithIdempotency, NewStrictHandlerWithIdempotency or WithIdempotentWebhooks"
	if store == nil {
		return "idem: the store is nil: " + what
	}
	switch v := reflect.ValueOf(store); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		if v.IsNil() {
			return fmt.Sprintf("idem: the store is a nil %T (declared but never assigned?): %s", store, what)
		}
	}
	return ""
}

// newEngineFor is idemgen.NewEngineFor: NewEngine for an engine that serves ops, as the generated
// WithIdempotency and NewStrictHandlerWithIdempotency build it. Where one of ops
// declares Security (the spec requires authentication for it), a key space
// shared by every caller is never the silent default: unless opts choose
// one with [WithScope], [WithScopeFromHeader] or [WithSharedKeySpace],
// it panics, naming the operations and the options to add. It
// panics too on a storage policy (Final, Transient) that
// idemop.CheckFinal refuses.
func newEngineFor(ops []*idemop.Operation, store idemstore.Store, opts ...Option) *Engine {
	e := NewEngine(store, opts...)
	if msg := e.cfg.unscopedSecured(ops); msg != "" {
		panic(msg)
	}
	for _, op := range ops {
		if err := idemop.CheckFinal(op.Final, op.Transient); err != nil {
			panic(fmt.Sprintf("idem: operation %s: storage policy: %v", op.ID, strings.ReplaceAll(err.Error(), "\n", "; ")))
		}
	}
	return e
}

// Serve runs next under the idempotency protocol for op: it reads and bounds
// the body (restoring r.Body for next), fingerprints the request, acquires
// the key, runs next with a buffering recorder and a context carrying the
// key and fence, stores the result and then writes it; or answers a replay,
// 400, 409, 413, 422 or 503 itself. Used by the generated ServerInterface
// decorator.
func (e *Engine) Serve(w http.ResponseWriter, r *http.Request, op *idemop.Operation, next http.HandlerFunc) {
	k, raw, prob := e.identifyHTTP(r, op)
	switch {
	case prob != nil:
		_ = prob.Response().Write(w)
		return
	case k == nil: // optional key, none sent: unprotected
		next(w, withBody(r.Context(), r, raw))
		return
	}
	var rec *recorder
	k.withRecorder = true
	o := e.protect(r.Context(), k, r, raw, func(ctx context.Context) (*Response, error) {
		rec = k.takeRecorder().open(w) // allocated with the lease
		rec.streamPast(e.cfg.storedBodyLimit)
		next(rec, withBodyIn(ctx, r, raw, &rec.reqBody))
		if rec.hijacked {
			// The handler answered on the connection itself: the layer never
			// saw that answer, so it stores none (an empty 200 would be
			// replayed to every retry) and releases the lease.
			e.report(ctx, k, nil, Event{Err: errHijacked}, levelWarn,
				"idem: the handler hijacked the connection, so its answer was never seen: nothing is stored and the lease is released (a retry runs the handler again)")
			return nil, errHijacked
		}
		if !rec.answered() && ctx.Err() != nil {
			return nil, ctx.Err() // cancelled before it answered: release
		}
		return rec.response(), nil
	})
	switch {
	case rec != nil && rec.wrote(): // hijacked, or streamed past the stored-body limit: w has the answer
	case o.kind == answered && o.acq.Outcome == idemstore.OutcomeReplay:
		_ = writeReplay(w, o.acq.Record) // without building the Response
	case o.kind == degraded:
		w.Header().Set(idemop.HeaderDegraded, "true")
		next(w, withBody(r.Context(), r, raw))
	case o.kind != ran:
		_ = o.problem().Write(w)
	case o.err != nil || o.resp == nil:
		_ = cancelledProblem().Response().Write(w)
	case e.cfg.hooks.Unstored == nil && e.cfg.hooks.Unreplicated == nil:
		// The recorder's response, which only a hook given Event.Response
		// could keep (and the store copies what it keeps): w's header may
		// take its values as they are, without a copy.
		_ = o.resp.write(w, moveHeader)
	default:
		_ = o.resp.Write(w)
	}
}

// withBody returns a shallow copy of r with ctx and, when raw is not nil
// (the engine read the body), a fresh reader over raw as its body.
func withBody(ctx context.Context, r *http.Request, raw []byte) *http.Request {
	return withBodyIn(ctx, r, raw, nil)
}

// withBodyIn is withBody with body, unless nil, as the fresh reader.
func withBodyIn(ctx context.Context, r *http.Request, raw []byte, body *bodyReader) *http.Request {
	r = r.WithContext(ctx)
	if raw != nil {
		if body == nil {
			body = &bodyReader{}
		}
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

// Middleware is the hand-wired form of Serve for routes that are not
// generated: the standard func(http.Handler) http.Handler shape. Like
// idemgen.NewEngineFor, it panics when op declares Security and the engine's
// options choose no key space.
func (e *Engine) Middleware(op idemop.Operation) func(http.Handler) http.Handler {
	if msg := e.cfg.unscopedSecured([]*idemop.Operation{&op}); msg != "" {
		panic(msg)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.Serve(w, r, &op, next.ServeHTTP)
		})
	}
}

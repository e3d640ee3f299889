package idem

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Event describes one step of the protocol, for [Hooks].
type Event struct {
	Operation string            // operation ID
	KeyHash   string            // short hash of the storage key; the key itself is never exposed
	Fence     int64             // fencing token of the owned lease (FirstRun, Recovered, Completed, ...)
	Remaining time.Duration     // remaining lease of the other owner (Conflict)
	Status    int               // response status (Replayed, Completed, Released)
	Err       error             // the error (idemstore.StoreError, LeaseLost, Released after a failure, Unstored, Unreplicated)
	Call      string            // the store call: "acquire", "complete", "release" or "extend"; with an idemstore.TxStore "rollback" instead of "release", and "keepalive" instead of "extend" (StoreCall)
	Outcome   idemstore.Outcome // what the store answered an acquire (the end of its StoreCall)
	Response  *Response         // the response that could not be stored (Unstored) or confirmed (Unreplicated); read it, do not change it
}

// Hooks are optional callbacks for metrics and tracing. Each runs
// synchronously on the request's goroutine (or the heartbeat's, for a lost
// lease), so it must be quick. Nil fields are skipped.
type Hooks struct {
	FirstRun   func(ctx context.Context, ev Event) // a first run owns the lease (outcome first run)
	Recovered  func(ctx context.Context, ev Event) // a stale lease was taken over
	Replayed   func(ctx context.Context, ev Event) // a stored result was answered
	Conflict   func(ctx context.Context, ev Event) // answered 409: the original still runs
	Mismatch   func(ctx context.Context, ev Event) // answered 422: another fingerprint
	Completed  func(ctx context.Context, ev Event) // the result was stored
	Released   func(ctx context.Context, ev Event) // the lease was released for a retry
	LeaseLost  func(ctx context.Context, ev Event) // another worker took the lease over
	StoreError func(ctx context.Context, ev Event) // the store failed

	// StoreCall and Handler time the steps of a request, for latency
	// histograms and spans. Each is called as its step starts and returns
	// the context of the step (ctx itself, or one carrying a span) and a
	// function that the engine calls, when it is not nil, as the step ends.
	// The store call runs with the returned context's values (still
	// detached from the request's cancellation), so a span started there is
	// the parent of the store's own. Unset, they cost no allocation and no
	// clock reading.
	//
	// StoreCall brackets every call of the engine to its store. The start
	// event has Call and, for complete, release, extend and keepalive, Fence; the end
	// event has Call, Fence, Err (the store's failure, or idemstore.ErrNotOwner when
	// the store refused the call), Status (complete) and, for an acquire
	// the store answered, idemstore.Outcome.
	StoreCall func(ctx context.Context, ev Event) (context.Context, func(Event))
	// Handler brackets the handler, run as the lease's owner. The start
	// event has Fence; the end event has Status (the handler's response, 0
	// without one) and Err (its error; a panic is reported as an error and
	// then goes on).
	Handler func(ctx context.Context, ev Event) (context.Context, func(Event))
	// Unstored is called when a handler's storable response could not be
	// stored: completion failed with store errors and was retried until the
	// lease would lapse. ev.Response is that response, which the client
	// gets (marked Idempotency-Degraded: true); ctx carries the run's Info
	// (FromContext: key and fence). Once the lease lapses, a retry with the
	// key runs the handler again as a recovered lease (the Reconciler, if
	// set, runs first): keep the response here to answer it from your own
	// records.
	Unstored func(ctx context.Context, ev Event)
	// Unreplicated is called, instead of Completed, when the result was
	// stored but the store could not confirm in time that it survives a
	// failover (Redis: no replica acknowledged it, see ErrUnreplicated).
	// ev.Response is the handler's response, which the client gets marked
	// Idempotency-Degraded: true (Do returns the result as it is: this
	// hook is what tells); ev.Err says what the store waited for. A
	// retry replays the result unless a failover loses it first, and then
	// runs the handler again.
	Unreplicated func(ctx context.Context, ev Event)
}

// step is a step that StoreCall or Handler brackets: its end, or a zero
// step (nothing to call) when the hook is not set.
type step struct {
	ev  Event       // the start event: operation, key hash, call, fence
	end func(Event) // nil: no hook, or the hook wants no end
}

// startStep calls hook h (if set) as a step of k starts; it returns the
// step's context (ctx without a hook) and the step to end. Without a hook it
// costs neither an allocation nor a clock reading.
func (e *Engine) startStep(ctx context.Context, k *keyedRequest, h func(context.Context, Event) (context.Context, func(Event)), call string, fence int64) (context.Context, step) {
	if h == nil {
		return ctx, step{}
	}
	ev := Event{Operation: k.op.ID, KeyHash: keyHash(k.storageKey), Call: call, Fence: fence}
	sctx, end := h(ctx, ev)
	if sctx == nil {
		sctx = ctx
	}
	return sctx, step{ev: ev, end: end}
}

// done ends the step with result, which gets the start event's operation,
// key hash, call and (unless set) fence.
func (s step) done(result Event) {
	if s.end == nil {
		return
	}
	result.Operation, result.KeyHash, result.Call = s.ev.Operation, s.ev.KeyHash, s.ev.Call
	if result.Fence == 0 {
		result.Fence = s.ev.Fence
	}
	s.end(result)
}

// startCall starts the StoreCall step of a call the lease's owner makes.
func (l *lease) startCall(ctx context.Context, call string) (context.Context, step) {
	return l.e.startStep(ctx, l.k, l.e.cfg.hooks.StoreCall, call, l.info.Fence)
}

// timedHandler returns fn bracketed by the Handler hook, or fn itself when
// the hook is not set.
func (e *Engine) timedHandler(k *keyedRequest, fence int64, fn func(context.Context) (*Response, error)) func(context.Context) (*Response, error) {
	h := e.cfg.hooks.Handler
	if h == nil {
		return fn
	}
	return func(ctx context.Context) (resp *Response, err error) {
		ctx, s := e.startStep(ctx, k, h, "", fence)
		ended := false
		defer func() {
			if !ended { // fn panicked: report it, and let the panic go on
				s.done(Event{Err: errPanicked})
			}
		}()
		resp, err = fn(ctx)
		ended = true
		result := Event{Err: err}
		if resp != nil {
			result.Status = resp.Status
		}
		s.done(result)
		return resp, err
	}
}

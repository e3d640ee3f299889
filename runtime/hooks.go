package idem

import (
	"context"
	"time"
)

// Event describes one step of the protocol, for [Hooks].
type Event struct {
	Operation string        // operation ID
	KeyHash   string        // short hash of the storage key; the key itself is never exposed
	Fence     int64         // fencing token of the owned lease (Acquired, Recovered, Completed, ...)
	Remaining time.Duration // remaining lease of the other owner (Conflict)
	Status    int           // response status (Replayed, Completed, Released)
	Err       error         // the error (StoreError, LeaseLost, Released after a failure, Unstored)
	Response  *Response     // the response that could not be stored (Unstored); read it, do not change it
}

// Hooks are optional callbacks for metrics and tracing. Each runs
// synchronously on the request's goroutine (or the heartbeat's, for a lost
// lease), so it must be quick. Nil fields are skipped.
type Hooks struct {
	Acquired   func(ctx context.Context, ev Event) // a first run owns the lease
	Recovered  func(ctx context.Context, ev Event) // a stale lease was taken over
	Replayed   func(ctx context.Context, ev Event) // a stored result was answered
	Conflict   func(ctx context.Context, ev Event) // answered 409: the original still runs
	Mismatch   func(ctx context.Context, ev Event) // answered 422: another fingerprint
	Completed  func(ctx context.Context, ev Event) // the result was stored
	Released   func(ctx context.Context, ev Event) // the lease was released for a retry
	LeaseLost  func(ctx context.Context, ev Event) // another worker took the lease over
	StoreError func(ctx context.Context, ev Event) // the store failed

	// Unstored is called when a handler's storable response could not be
	// stored: completion failed with store errors and was retried until the
	// lease would lapse. ev.Response is that response, which the client
	// gets (marked Idempotency-Degraded: true); ctx carries the run's Info
	// (FromContext: key and fence). Once the lease lapses, a retry with the
	// key runs the handler again as a recovered lease (the Reconciler, if
	// set, runs first): keep the response here to answer it from your own
	// records.
	Unstored func(ctx context.Context, ev Event)
}

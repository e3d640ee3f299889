package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// Errors of [Do].
var (
	// ErrFingerprintMismatch is returned when the key was already used with
	// another payload.
	ErrFingerprintMismatch = errors.New("idem: idempotency key was used with another payload")
	// ErrInProgress matches every *InProgressError with errors.Is.
	ErrInProgress = errors.New("idem: idempotency key is in progress elsewhere")
	// ErrResultOmitted is returned on a replay whose result was larger than
	// the stored-body limit and was therefore not kept.
	ErrResultOmitted = errors.New("idem: stored result was too large to keep")
)

// InProgressError is returned by [Do] when another worker holds the key's
// lease (after op.Wait, if set). Remaining is how long that lease still runs
// unless extended; a redelivery after it may take over.
type InProgressError struct {
	Remaining time.Duration
}

// Error implements error.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v (lease remaining %v)", ErrInProgress, e.Remaining)
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// Do runs fn at most once for key, for code that is not HTTP, such as a
// queue consumer that receives at-least-once deliveries. It is the engine's
// state machine with the HTTP taken out: the key is scoped to op.ID, payload
// is fingerprinted, fn runs under a lease (heartbeat, Info in its context)
// and its result is stored for op.Retention.
//
// op must not be nil; of it only ID, Lock, Retention, Wait and the storage
// policy are used (fn's result is stored as a 200 answer would be: a Final
// without 2xx leaves it unstored; a policy CheckFinal refuses is an error). Of
// opts, the key-space options (WithScope, WithScopeFromHeader) and the HTTP
// limits do not apply: put a tenant into key itself.
//
// A first call returns fn's result and replayed false; a later call with the
// same key and payload returns the stored result and replayed true. fn's
// error releases the lease, so a redelivery runs fn again, and is returned
// as is. Other errors: ErrInvalidKey, ErrFingerprintMismatch, a
// *InProgressError, ErrStoreUnavailable (unless WithFailOpen, which runs fn
// unprotected), ErrStoreMisconfigured (fn never runs, fail-open or not),
// ErrResultOmitted.
func Do(ctx context.Context, store idemstore.Store, op *idemop.Operation, key string, payload []byte,
	fn func(ctx context.Context) ([]byte, error), opts ...Option) (result []byte, replayed bool, err error) {
	return NewEngine(store, opts...).Do(ctx, op, key, payload, fn)
}

// Do is [Do] with the engine's store and options.
func (e *Engine) Do(ctx context.Context, op *idemop.Operation, key string, payload []byte,
	fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	if err := keyheader.Check(key); err != nil {
		return nil, false, err
	}
	if err := idemop.CheckFinal(op.Final, op.Transient); err != nil {
		return nil, false, fmt.Errorf("idem: operation %s: storage policy: %w", op.ID, err)
	}
	k := e.newKeyedRequest(op, "", key, fingerprint(op, nil, rawPayload(payload)))
	o := e.protect(ctx, k, nil, nil, func(ctx context.Context) (*Response, error) {
		result, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return &Response{Status: http.StatusOK, Body: result}, nil
	})
	switch o.kind {
	case ran:
		if o.err != nil {
			return nil, false, o.err
		}
		return o.resp.Body, false, nil
	case answered:
		return storedResult(o.acq)
	case degraded:
		result, err := fn(ctx)
		return result, false, err
	case unreconciled:
		return nil, false, fmt.Errorf("idem: reconcile recovered lease: %w", o.err)
	}
	return nil, false, o.err // unavailable, misconfigured, cancelled
}

// storedResult is Do's answer to an acquisition that did not give this
// call the lease.
func storedResult(acq idemstore.Acquisition) ([]byte, bool, error) {
	switch acq.Outcome {
	case idemstore.OutcomeReplay:
		if acq.Record.BodyOmitted {
			return nil, true, ErrResultOmitted
		}
		return acq.Record.Body, true, nil
	case idemstore.OutcomeMismatch:
		return nil, false, ErrFingerprintMismatch
	}
	return nil, false, &InProgressError{Remaining: acq.Remaining}
}

// rawPayload is a payload hashed as bytes.
func rawPayload(b []byte) payload { return payload{raw: b} }

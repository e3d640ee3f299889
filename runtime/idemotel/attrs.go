package idemotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Attribute keys. The values of each are bounded: an operation ID from the
// spec, one of a few fixed words, a status code.
const (
	keyOperation  = attribute.Key("idem.operation")
	keyOutcome    = attribute.Key("idem.outcome")
	keyStoreCall  = attribute.Key("idem.store.call")
	keyFence      = attribute.Key("idem.fence") // spans only: it grows
	keyReplayed   = attribute.Key("idem.replayed")
	keyRetryCause = attribute.Key("idem.retry.cause")
	keyRetryAfter = attribute.Key("idem.retry_after")
	keyStatus     = attribute.Key("http.response.status_code")
	keyErrorType  = attribute.Key("error.type")
)

// The values of the idem.outcome attribute.
const (
	OutcomeFirstRun   = "first_run"   // the key was new: the handler runs as its owner
	OutcomeRecovered  = "recovered"   // a stale lease was taken over: the handler runs again
	OutcomeReplay     = "replay"      // the stored result was answered
	OutcomeConflict   = "conflict"    // 409: the original still runs
	OutcomeMismatch   = "mismatch"    // 422: the key was reused with another request
	OutcomeCompleted  = "completed"   // the result was stored
	OutcomeReleased   = "released"    // the lease was given back for a retry (5xx, panic, cancellation)
	OutcomeLeaseLost  = "lease_lost"  // another worker took the lease over
	OutcomeStoreError = "store_error" // the store failed (503, or fail-open)

	// OutcomeMisconfigured: the store refuses to run misconfigured (an
	// evicting maxmemory-policy, scripts denied): 503 store-misconfigured,
	// the handler does not run.
	OutcomeMisconfigured = "misconfigured"
	// OutcomeUnstored: the handler's result could not be stored although
	// completion was retried while the lease lasted (Hooks.Unstored).
	OutcomeUnstored = "unstored"
	// OutcomeUnreplicated: the result was stored, but no replica
	// acknowledged it in time, so the client got it marked
	// Idempotency-Degraded (Hooks.Unreplicated; counted instead of
	// completed).
	OutcomeUnreplicated = "unreplicated"
)

// acquireOutcome is the idem.outcome of an acquire's answer.
func acquireOutcome(o idemstore.Outcome) string {
	switch o {
	case idemstore.OutcomeFirstRun:
		return OutcomeFirstRun
	case idemstore.OutcomeRecovered:
		return OutcomeRecovered
	case idemstore.OutcomeReplay:
		return OutcomeReplay
	case idemstore.OutcomeConflict:
		return OutcomeConflict
	case idemstore.OutcomeMismatch:
		return OutcomeMismatch
	}
	return ""
}

// storeErrorType is the error.type of a failed store call.
func storeErrorType(err error) string {
	switch {
	case errors.Is(err, idemstore.ErrNotOwner):
		return "not_owner"
	case errors.Is(err, idemstore.ErrUnreplicated):
		return "unreplicated"
	}
	return "store_unavailable"
}

// attemptCause is the idem.retry.cause of a client attempt.
func attemptCause(info idem.AttemptInfo) string {
	switch {
	case info.Err == nil:
		return "status"
	case errors.Is(info.Err, idem.ErrAttemptTimeout):
		return "attempt_timeout"
	case errors.Is(info.Err, context.Canceled), errors.Is(info.Err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "transport"
}

package idem

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Causes of a [RetryError]. The three budget errors wrap ErrBudgetExceeded,
// so errors.Is(err, ErrBudgetExceeded) tells any of them.
var (
	// ErrBudgetExceeded means the call gave up because its retry policy
	// allowed no further attempt.
	ErrBudgetExceeded = errors.New("idem: retry budget exceeded")
	// ErrAttemptsExhausted means RetryPolicy.MaxAttempts attempts were made.
	ErrAttemptsExhausted = fmt.Errorf("%w: attempts exhausted", ErrBudgetExceeded)
	// ErrTimeExhausted means the next attempt would have started after
	// RetryPolicy.MaxElapsed or after the context's deadline.
	ErrTimeExhausted = fmt.Errorf("%w: no time left for another attempt", ErrBudgetExceeded)
	// ErrRetryAfterExceedsBudget means the server's Retry-After ends after
	// the remaining time budget (MaxElapsed or the context's deadline), so
	// the call failed at once instead of sleeping; RetryError.RetryAfter
	// holds the wait the server asked for.
	ErrRetryAfterExceedsBudget = fmt.Errorf("%w: retry-after exceeds the remaining time", ErrBudgetExceeded)
	// ErrAttemptTimeout wraps the error of an attempt cut off by
	// RetryPolicy.AttemptTimeout (such an attempt is retried).
	ErrAttemptTimeout = errors.New("idem: attempt timed out")
	// ErrNoResponse is the cause when an attempt function returned neither a
	// response nor an error.
	ErrNoResponse = errors.New("idem: attempt returned no response and no error")
)

// RetryError is returned when a call gives up: attempts or time exhausted, a
// Retry-After beyond the budget, a transport error that is not retried, or
// the context ended.
type RetryError struct {
	Op           string         // operation ID
	Key          string         // the idempotency key sent on every attempt
	Attempts     int            // attempts made, 0 if the context ended before the first
	LastStatus   int            // 0 when the last attempt had a transport error
	LastResponse *http.Response // body already read by oapi-codegen's client
	// RetryAfter is the wait the server asked for when it exceeded the
	// remaining budget (Err is ErrRetryAfterExceedsBudget); 0 otherwise.
	RetryAfter time.Duration
	// Err is the cause: ErrAttemptsExhausted, ErrTimeExhausted or
	// ErrRetryAfterExceedsBudget (each joined with the last transport error,
	// if any), a transport error that is not retried, or ctx.Err().
	Err error
}

// Error describes the failure without the key, which stays in e.Key: keys
// are kept out of logs.
func (e *RetryError) Error() string {
	last := "no response"
	if e.LastStatus != 0 {
		last = fmt.Sprintf("last status %d", e.LastStatus)
	}
	plural := "s"
	if e.Attempts == 1 {
		plural = ""
	}
	cause := "unknown cause"
	if e.Err != nil {
		cause = strings.TrimPrefix(e.Err.Error(), "idem: ")
	}
	if e.RetryAfter > 0 {
		cause += fmt.Sprintf(" (Retry-After %v)", e.RetryAfter)
	}
	return fmt.Sprintf("idem: %s gave up after %d attempt%s (%s): %s", e.Op, e.Attempts, plural, last, cause)
}

// Unwrap returns e.Err, so that errors.Is and errors.As see the cause.
func (e *RetryError) Unwrap() error { return e.Err }

// budgetError joins a budget sentinel with the last transport error, if any.
func budgetError(reason, last error) error {
	if last == nil {
		return reason
	}
	return fmt.Errorf("%w: %w", reason, last)
}

package idemop

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ClientOperation is the per-operation client configuration that generated
// code declares once (from x-idempotent.key, .lock and .retry).
type ClientOperation struct {
	ID         string      // operationId as oapi-codegen names it
	KeyHeader  string      // header that carries the key ("" for a body key)
	KeyPointer string      // JSON Pointer of a body key
	Policy     RetryPolicy // defaults from the spec

	// Lock is the server's lease on a key in progress (x-idempotent.lock;
	// 0: DefaultLock): a run whose process died holds the key that long
	// before a retry can take it over, answered 409 meanwhile. A zero
	// Policy.MaxElapsed is DefaultMaxElapsed(Lock), so that the call's
	// patience outlasts the lock.
	Lock time.Duration
}

// RetryPolicy is how a generated client helper retries one logical call.
// Zero fields take the defaults of [DefaultRetryPolicy]; a nil RetryOn takes
// the default statuses, while an empty non-nil RetryOn retries no status
// (transport errors are still retried).
type RetryPolicy struct {
	// MaxAttempts is how many attempts the call makes, the first
	// included; 1 means no retry. Above 1, an attempt that the server
	// refused before running anything counts against MaxElapsed only: a
	// refused connection (ECONNREFUSED: nothing listens, as while a server
	// restarts) and a 409 whose Retry-After asks for a wait of a second or
	// more (the key's run is in progress, or its dead process's lease has
	// not lapsed yet: come back then). A Retry-After of 0, a date not in
	// the future or a value that does not parse is no advice: the
	// backoff applies and the attempt counts.
	MaxAttempts     int
	InitialInterval time.Duration // backoff cap before the first retry
	MaxInterval     time.Duration // largest backoff wait; a server's Retry-After is obeyed beyond it
	Multiplier      float64       // growth of the backoff cap per retry, at least 1
	// MaxElapsed: no attempt starts later than this after Run began; 0
	// is DefaultMaxElapsed of the operation's lock (ClientOperation.Lock).
	MaxElapsed     time.Duration
	AttemptTimeout time.Duration // 0: none; its expiry is retried
	RetryOn        []int         // statuses that are retried
}

// ErrInvalidPolicy is returned (wrapped) by [RetryPolicy.Validate], and by
// idem's Call.Run when the call's policy is invalid.
var ErrInvalidPolicy = errors.New("idem: invalid retry policy")

// DefaultRetryPolicy returns the documented defaults: 5 attempts, 200ms
// initial, 5s max interval, multiplier 2, 30s elapsed, retry on 409, 429,
// 502, 503, 504. The 30s are the margin: a call's default MaxElapsed is
// the operation's lock plus it ([DefaultMaxElapsed]).
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxAttempts:     5,
		InitialInterval: 200 * time.Millisecond,
		MaxInterval:     5 * time.Second,
		Multiplier:      2,
		MaxElapsed:      30 * time.Second,
		RetryOn:         []int{409, 429, 502, 503, 504},
	}
}

// Validate reports the first impossible value of p, wrapping
// [ErrInvalidPolicy]: a negative count or duration, a multiplier below 1 or
// not finite, or a RetryOn status outside 401..599 or equal to 422 (400 and
// 422 answer the same request the same way every time, so they are never
// retried). Zero values are valid: they mean the defaults.
func (p RetryPolicy) Validate() error {
	var problem string
	switch {
	case p.MaxAttempts < 0:
		problem = fmt.Sprintf("max attempts %d is negative", p.MaxAttempts)
	case p.InitialInterval < 0:
		problem = fmt.Sprintf("initial interval %v is negative", p.InitialInterval)
	case p.MaxInterval < 0:
		problem = fmt.Sprintf("max interval %v is negative", p.MaxInterval)
	case p.MaxElapsed < 0:
		problem = fmt.Sprintf("max elapsed %v is negative", p.MaxElapsed)
	case p.AttemptTimeout < 0:
		problem = fmt.Sprintf("attempt timeout %v is negative", p.AttemptTimeout)
	case p.Multiplier != 0 && !(p.Multiplier >= 1 && !math.IsInf(p.Multiplier, 1)):
		problem = fmt.Sprintf("multiplier %v is below 1 or not finite", p.Multiplier)
	}
	for _, s := range p.RetryOn {
		if problem != "" {
			break
		}
		if s <= 400 || s > 599 || s == 422 {
			problem = fmt.Sprintf("status %d cannot be retried", s)
		}
	}
	if problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, problem)
	}
	return nil
}

// DefaultMaxElapsed is the time budget of a call to an operation whose
// lock (x-idempotent.lock) is lock, when neither the spec nor the caller
// sets MaxElapsed: the lock, which is how long a run whose process died
// holds the key (a retry is answered 409 until it lapses and then takes
// the run over), plus DefaultRetryPolicy's MaxElapsed (30s) as the margin
// for the restart, the wait before the takeover's attempt, and whatever
// else fails meanwhile. A lock of 0 is DefaultLock (30s): 1 minute.
func DefaultMaxElapsed(lock time.Duration) time.Duration {
	if lock <= 0 {
		lock = DefaultLock
	}
	return lock + DefaultRetryPolicy().MaxElapsed
}

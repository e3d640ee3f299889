package idem

import (
	"slices"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// RetryPolicy is how a generated client helper retries one logical call;
// see [idemop.RetryPolicy], of which it is an alias.
type RetryPolicy = idemop.RetryPolicy

// ErrInvalidPolicy is returned (wrapped) by [RetryPolicy.Validate], and by
// [Call.Run] when the call's policy is invalid.
var ErrInvalidPolicy = idemop.ErrInvalidPolicy

// DefaultRetryPolicy returns the documented defaults: 5 attempts, 200ms
// initial, 5s max interval, multiplier 2, 30s elapsed, retry on 409, 429,
// 502, 503, 504. The 30s are the margin: a call's default MaxElapsed is
// the operation's lock plus it ([DefaultMaxElapsed]).
func DefaultRetryPolicy() RetryPolicy { return idemop.DefaultRetryPolicy() }

// DefaultMaxElapsed is the time budget of a call to an operation whose
// lock (x-idempotent.lock) is lock, when neither the spec nor the caller
// sets MaxElapsed: the lock plus DefaultRetryPolicy's MaxElapsed (30s)
// as the margin (see [idemop.DefaultMaxElapsed]).
func DefaultMaxElapsed(lock time.Duration) time.Duration { return idemop.DefaultMaxElapsed(lock) }

// withDefaults returns p with its zero fields replaced by the defaults,
// MaxElapsed by DefaultMaxElapsed(lock). RetryOn is copied, so the result
// shares no memory with p.
func withDefaults(p RetryPolicy, lock time.Duration) RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts == 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialInterval == 0 {
		p.InitialInterval = d.InitialInterval
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = d.MaxInterval
	}
	if p.Multiplier == 0 {
		p.Multiplier = d.Multiplier
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = DefaultMaxElapsed(lock)
	}
	if p.RetryOn == nil {
		p.RetryOn = d.RetryOn
	} else {
		p.RetryOn = slices.Clone(p.RetryOn)
	}
	return p
}

// retriesStatus reports whether p retries an answer with status.
func retriesStatus(p RetryPolicy, status int) bool {
	return slices.Contains(p.RetryOn, status)
}

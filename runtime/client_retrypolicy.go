package idem

import (
	"slices"

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
// 502, 503, 504.
func DefaultRetryPolicy() RetryPolicy { return idemop.DefaultRetryPolicy() }

// withDefaults returns p with its zero fields replaced by the defaults.
// RetryOn is copied, so the result shares no memory with p.
func withDefaults(p RetryPolicy) RetryPolicy {
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
		p.MaxElapsed = d.MaxElapsed
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

package idem

import (
	"slices"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// withDefaults returns p with its zero fields replaced by the defaults,
// MaxElapsed by DefaultMaxElapsed(lock). RetryOn is copied, so the result
// shares no memory with p.
func withDefaults(p idemop.RetryPolicy, lock time.Duration) idemop.RetryPolicy {
	d := idemop.DefaultRetryPolicy()
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
		p.MaxElapsed = idemop.DefaultMaxElapsed(lock)
	}
	if p.RetryOn == nil {
		p.RetryOn = d.RetryOn
	} else {
		p.RetryOn = slices.Clone(p.RetryOn)
	}
	return p
}

// retriesStatus reports whether p retries an answer with status.
func retriesStatus(p idemop.RetryPolicy, status int) bool {
	return slices.Contains(p.RetryOn, status)
}

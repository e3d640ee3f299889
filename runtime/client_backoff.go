package idem

import (
	"context"
	"math"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// backoffCap is the upper bound of the wait before retry number retry (0 for
// the wait after the first attempt): min(MaxInterval, InitialInterval *
// Multiplier^retry). p must have its defaults applied.
func backoffCap(p idemop.RetryPolicy, retry int) time.Duration {
	c := float64(p.InitialInterval) * math.Pow(p.Multiplier, float64(retry))
	if math.IsNaN(c) || c >= float64(p.MaxInterval) {
		return p.MaxInterval
	}
	return time.Duration(c)
}

// fullJitter draws the wait uniformly from [0, limit) with int64n (which
// returns a value in [0, n) for n > 0). The jitter is applied after the cap
// ("full jitter"), so once the cap reaches MaxInterval the waits still spread
// over the whole interval instead of bunching at its top.
func fullJitter(limit time.Duration, int64n func(n int64) int64) time.Duration {
	if limit <= 0 {
		return 0
	}
	return time.Duration(int64n(int64(limit)))
}

// sleepContext waits for d or until ctx ends, whichever is first, and
// returns ctx.Err() in the second case. It is the default sleep of a
// [Caller].
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

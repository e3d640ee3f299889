// Package ewma keeps running estimates of durations, per key: the engine's
// estimate of how long a run of each operation takes, which a 409 answers
// as Retry-After.
package ewma

import (
	"sync"
	"sync/atomic"
	"time"
)

// Durations keeps, per key, an exponentially weighted moving average of the
// durations observed, weight 1/4 for the newest. It is safe for concurrent
// use, its zero value is ready, and an observation of a known key allocates
// nothing.
type Durations[K comparable] struct {
	m sync.Map // K -> *atomic.Int64 (nanoseconds; 0: nothing observed yet)
}

// Observe adds a duration d of k.
func (t *Durations[K]) Observe(k K, d time.Duration) {
	v, ok := t.m.Load(k)
	if !ok {
		v, _ = t.m.LoadOrStore(k, new(atomic.Int64))
	}
	a := v.(*atomic.Int64)
	d = max(d, 1) // 0 means nothing observed yet
	for {
		old := a.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/4
		}
		if a.CompareAndSwap(old, next) {
			return
		}
	}
}

// Estimate returns the running estimate of k, 0 when nothing was observed.
func (t *Durations[K]) Estimate(k K) time.Duration {
	if v, ok := t.m.Load(k); ok {
		return time.Duration(v.(*atomic.Int64).Load())
	}
	return 0
}

package idem

import (
	"sync"
	"sync/atomic"
	"time"
)

// runTimes keeps, per operation, a running estimate of how long a run takes
// in this process (the handler and storing its result): an exponentially
// weighted moving average, weight 1/4 for the newest run. A 409 answers it
// as Retry-After, so a duplicate comes back about when the original is
// done rather than when its lease would lapse. Safe for concurrent use; an
// observation of a known operation allocates nothing.
type runTimes struct {
	m sync.Map // *Operation -> *atomic.Int64 (nanoseconds; 0: no run yet)
}

// observe adds a run of op that took d.
func (t *runTimes) observe(op *Operation, d time.Duration) {
	v, ok := t.m.Load(op)
	if !ok {
		v, _ = t.m.LoadOrStore(op, new(atomic.Int64))
	}
	a := v.(*atomic.Int64)
	d = max(d, 1) // 0 means no run yet
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

// estimate returns the running estimate of a run of op, 0 when none ran.
func (t *runTimes) estimate(op *Operation) time.Duration {
	if v, ok := t.m.Load(op); ok {
		return time.Duration(v.(*atomic.Int64).Load())
	}
	return 0
}

// conflictRetryAfter is the Retry-After of a 409 for op whose original's
// lease has remaining left: the estimated run time (how long the original
// as a whole takes; how long it has run already is unknown, and may be in
// another process), at most the remaining lease (it is over by then, done
// or taken over) and at least 1s. Without an estimate (no run of op in this
// process yet) it is 1s: an early retry costs one more 409, which by then
// may carry an estimate.
func (e *Engine) conflictRetryAfter(op *Operation, remaining time.Duration) time.Duration {
	return max(min(e.runTimes.estimate(op), remaining), time.Second)
}

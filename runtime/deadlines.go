package idem

import (
	"context"
	"sync/atomic"
	"time"
)

// deadlineSteps is how many steps a store timeout is cut into (see
// storeDeadlines): a store call is bounded by at least
// (deadlineSteps-1)/deadlineSteps of the timeout and never by more.
const deadlineSteps = 64

// storeDeadlines hands out the contexts of store calls: with the values of
// the request's context, not cancelled with it, bounded by the store
// timeout.
//
// context.WithTimeout per call would start and stop a runtime timer twice
// per first request, a good part of the engine's own CPU under load
// (BENCHMARKS.md). Calls share deadlines instead: time is cut into steps of
// timeout/deadlineSteps, and every call that starts within one step gets
// that step's deadline context, which ends one timeout after the step's
// start, cancelled by its own timer. A call's own context (storeCtx) adds
// its request's values.
type storeDeadlines struct {
	timeout time.Duration
	step    time.Duration
	epoch   time.Time // steps count from here; it has a monotonic reading
	cur     atomic.Pointer[sharedDeadline]
}

// sharedDeadline is the deadline context of one step.
type sharedDeadline struct {
	step   int64
	ctx    context.Context
	cancel context.CancelFunc // never called: the context ends by its deadline
}

func newStoreDeadlines(timeout time.Duration) *storeDeadlines {
	return &storeDeadlines{timeout: timeout, step: max(timeout/deadlineSteps, 1), epoch: time.Now()}
}

// context returns the context of a store call made for the request whose
// context is values.
func (d *storeDeadlines) context(values context.Context) context.Context {
	return &storeCtx{Context: d.current(), values: values}
}

// contextIn is context in c, a call context kept by the caller (a lease
// keeps one for its completion), which saves context's allocation; once c
// is used, it is context. (A store may keep a call's context past the call:
// c does not change once used.)
func (d *storeDeadlines) contextIn(c *storeCtx, values context.Context) context.Context {
	if c.Context != nil {
		return d.context(values)
	}
	*c = storeCtx{Context: d.current(), values: values}
	return c
}

// current returns the deadline context of the current step.
func (d *storeDeadlines) current() context.Context {
	step := int64(time.Since(d.epoch) / d.step)
	cur := d.cur.Load()
	if cur == nil || cur.step != step {
		next := &sharedDeadline{step: step}
		next.ctx, next.cancel = context.WithDeadline(context.Background(), d.epoch.Add(time.Duration(step)*d.step+d.timeout))
		if cur == nil || cur.step < step { // a late caller's older step does not replace a newer one
			d.cur.CompareAndSwap(cur, next)
		}
		cur = next
	}
	return cur.ctx
}

// storeCtx is a store call's context: the deadline, cancellation and error
// of its step's shared context, the values of its request's.
type storeCtx struct {
	context.Context                 // the step's: Deadline, Done, Err
	values          context.Context // the request's
}

// Value returns the request's value for key, except for the keys the
// context package answers about cancellation, which come from the step's
// context: so context.Cause reports the deadline, and a context derived
// from this one is cancelled with it.
func (c *storeCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// Package deadline hands out the contexts of an engine's store calls from
// deadlines that calls starting at about the same time share.
package deadline

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// steps is how many steps a store timeout is cut into (see Shared): a
// store call is bounded by at least (steps-1)/steps of the timeout and
// never by more. Each step's contexts (up to shards of them) live until
// their deadline, a timeout after the step began, timer and all, so under
// load steps*shards of them are live, and the garbage collector marks them
// at every cycle: with 64 steps, 2,048 contexts, about 60% of a busy
// engine's live heap; 16 steps cut the collector's CPU per first request
// on mysqlstore from 25 to 21-23 µs, and per replay from 13.5 to 10-11
// (gc-µs/op of the SQL floor benchmarks, internal/storebench, and a heap
// profile of mysqlstore's first requests and replays).
const steps = 16

// shards is how many deadline contexts one step has: each call takes one
// at random. Whatever watches a call's context registers on it (pgx does
// for every query: context.AfterFunc adds the watch to the context's
// children under the context's lock, and takes it out after the query),
// so with one context per step all concurrent calls take one lock: 448-868
// ns per watched call from 16 callers on two CPUs against 384-424 sharded
// (BenchmarkWatchedCalls), and more with more CPUs.
const shards = 32

// Shared hands out the contexts of store calls: with the values of the
// request's context, not cancelled with it, bounded by the store timeout.
//
// context.WithTimeout per call would start and stop a runtime timer twice
// per first request, a good part of the engine's own CPU under load.
// Calls share deadlines instead: time is cut into steps of
// timeout/steps, and every call that starts within one step gets that
// step's deadline context, which ends one timeout after the step's start,
// cancelled by its own timer (one per shard that a call of the step
// used). A call's own context (Ctx) adds its request's values.
type Shared struct {
	timeout time.Duration
	step    time.Duration
	epoch   time.Time                      // steps count from here; it has a monotonic reading
	cur     []atomic.Pointer[stepDeadline] // shards of them
}

// stepDeadline is the deadline context of one step.
type stepDeadline struct {
	step   int64
	ctx    context.Context
	cancel context.CancelFunc // never called: the context ends by its deadline
}

// New returns the Shared deadlines of store calls bounded by timeout.
func New(timeout time.Duration) *Shared {
	return newShared(timeout, shards)
}

// newShared is New with n shards per step.
func newShared(timeout time.Duration, n int) *Shared {
	return &Shared{timeout: timeout, step: max(timeout/steps, 1), epoch: time.Now(), cur: make([]atomic.Pointer[stepDeadline], n)}
}

// Context returns the context of a store call made for the request whose
// context is values.
func (d *Shared) Context(values context.Context) context.Context {
	return &Ctx{Context: d.current(time.Since(d.epoch)), values: values}
}

// ContextIn is Context in c, a call context kept by the caller (a lease
// keeps one for its completion), which saves Context's allocation; once c
// is used, it is Context. (A store may keep a call's context past the call:
// c does not change once used.)
func (d *Shared) ContextIn(c *Ctx, values context.Context) context.Context {
	ctx, _ := d.ContextNow(c, values)
	return ctx
}

// ContextNow is ContextIn that also returns the time it read to choose
// the step: when the call begins, for a caller that would read the clock
// for it again. Like time.Now's, the time carries the monotonic clock's
// reading, which comparisons and durations with other such times use;
// its wall clock reading is the epoch's, advanced by the monotonic clock
// (it misses changes of the wall clock since, so it is not for display).
func (d *Shared) ContextNow(c *Ctx, values context.Context) (context.Context, time.Time) {
	elapsed := time.Since(d.epoch)
	now := d.epoch.Add(elapsed)
	if c.Context != nil {
		return &Ctx{Context: d.current(elapsed), values: values}, now
	}
	*c = Ctx{Context: d.current(elapsed), values: values}
	return c, now
}

// current returns the deadline context of the step elapsed (since the
// epoch) falls in.
func (d *Shared) current(elapsed time.Duration) context.Context {
	step := int64(elapsed / d.step)
	sh := &d.cur[rand.IntN(len(d.cur))]
	cur := sh.Load()
	if cur == nil || cur.step != step {
		next := &stepDeadline{step: step}
		next.ctx, next.cancel = context.WithDeadline(context.Background(), d.epoch.Add(time.Duration(step)*d.step+d.timeout))
		if cur == nil || cur.step < step { // a late caller's older step does not replace a newer one
			sh.CompareAndSwap(cur, next)
		}
		cur = next
	}
	return cur.ctx
}

// Ctx is a store call's context: the deadline, cancellation and error
// of its step's shared context, the values of its request's.
type Ctx struct {
	context.Context                 // the step's: Deadline, Done, Err
	values          context.Context // the request's
}

// Value returns the request's value for key, except for the keys the
// context package answers about cancellation, which come from the step's
// context: so context.Cause reports the deadline, and a context derived
// from this one is cancelled with it.
func (c *Ctx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// Package lanes sends the calls of concurrent callers in natural batches:
// the SQL stores' reads, which share a round trip to the database when
// they come together. Up to n round trips are in flight at once, each
// holding a lane. A call that finds a lane free is sent at once, alone,
// from its caller's goroutine; otherwise it queues, and the lane that
// comes free next sends whatever has queued (up to a bound) in one round
// trip, until the queue is empty. So batches form only while every lane
// waits for the database, and hold the calls that came meanwhile; a call
// waits for at most the round trip before its own.
package lanes

import (
	"context"
	"sync"
	"time"
)

// Call is one caller's call in a batch: the request, and the reply and
// error that the batch's send sets.
type Call[Q, R any] struct {
	Ctx   context.Context
	Req   Q
	Reply R
	Err   error
	done  chan struct{}
}

// Lanes sends calls of type Q, replied with R, in batches.
type Lanes[Q, R any] struct {
	n, max int
	alone  func(context.Context, Q) (R, error)
	batch  func(context.Context, []*Call[Q, R])

	mu     sync.Mutex
	busy   int           // lanes with a round trip in flight
	queued []*Call[Q, R] // non-empty only while every lane is busy
}

// New returns n lanes that send up to max calls at once: a lone call
// through alone, with its own context, and two or more through batch,
// which sets each call's Reply and Err, with a context that ends at the
// latest of their deadlines (none if one of them has none). With n <= 0
// there are none: Do sends every call alone, at once.
func New[Q, R any](n, max int, alone func(context.Context, Q) (R, error), batch func(context.Context, []*Call[Q, R])) *Lanes[Q, R] {
	return &Lanes[Q, R]{n: n, max: max, alone: alone, batch: batch}
}

// Do sends q and returns its reply, or ctx's error once ctx ends first.
func (l *Lanes[Q, R]) Do(ctx context.Context, q Q) (R, error) {
	if l.n <= 0 {
		return l.alone(ctx, q)
	}
	l.mu.Lock()
	if l.busy < l.n { // then nothing is queued
		l.busy++
		l.mu.Unlock()
		r, err := l.alone(ctx, q)
		l.release()
		return r, err
	}
	c := NewCall[Q, R](ctx, q)
	l.queued = append(l.queued, c)
	l.mu.Unlock()
	select {
	case <-c.done:
		return c.Reply, c.Err
	case <-ctx.Done(): // Send skips it
		var zero R
		return zero, ctx.Err()
	}
}

// release frees a lane whose round trip is over, or, when calls have
// queued, keeps it for them: another goroutine sends them, batch after
// batch, until none is left.
func (l *Lanes[Q, R]) release() {
	if batch := l.next(); batch != nil {
		go l.drain(batch)
	}
}

// next takes the queued calls for a lane, up to max, or frees the lane
// (and returns nil) when none is queued.
func (l *Lanes[Q, R]) next() []*Call[Q, R] {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queued) == 0 {
		l.busy--
		return nil
	}
	k := min(len(l.queued), l.max)
	batch := l.queued[:k:k]
	l.queued = l.queued[k:]
	if len(l.queued) == 0 {
		l.queued = nil // the array's calls are their callers'
	}
	return batch
}

// drain sends batch and the batches that queue after it, holding one lane.
func (l *Lanes[Q, R]) drain(batch []*Call[Q, R]) {
	for batch != nil {
		l.Send(batch)
		batch = l.next()
	}
}

// Send sends calls as a lane does, at once, and marks each done: those
// whose context has ended get its error, a lone one goes through alone,
// two or more through batch.
func (l *Lanes[Q, R]) Send(calls []*Call[Q, R]) {
	live := make([]*Call[Q, R], 0, len(calls))
	var last time.Time // the latest deadline
	bounded := true
	for _, c := range calls {
		if err := c.Ctx.Err(); err != nil { // its caller has gone
			c.Err = err
			close(c.done)
			continue
		}
		live = append(live, c)
		if d, ok := c.Ctx.Deadline(); !ok {
			bounded = false
		} else if d.After(last) {
			last = d
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		c := live[0]
		c.Reply, c.Err = l.alone(c.Ctx, c.Req)
		close(c.done)
		return
	}
	ctx := context.Background()
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, last)
		defer cancel()
	}
	l.batch(ctx, live)
	for _, c := range live {
		close(c.done)
	}
}

// NewCall is a call of q with ctx, for Send.
func NewCall[Q, R any](ctx context.Context, q Q) *Call[Q, R] {
	return &Call[Q, R]{Ctx: ctx, Req: q, done: make(chan struct{})}
}

// Wait waits for c to be done.
func (c *Call[Q, R]) Wait() { <-c.done }

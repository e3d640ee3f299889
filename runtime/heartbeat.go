package idem

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// heartbeat extends a lease every lock/3 while its handler runs. It holds no
// goroutine and arms no timer of its own: the engine's heartbeats wait in one
// queue per interval (beats), first due first, behind one timer armed for
// the first, so starting and stopping a heartbeat is a list insertion and a
// removal under a lock, and a request that ends before lock/3, the usual
// case, costs no timer and no allocation. An extension runs on a goroutine of
// its own, then queues the heartbeat again. It is part of its lease, which
// starts and stops it.
type heartbeat struct {
	ctx  context.Context // the request's; extend detaches and bounds it
	lock time.Duration
	q    *beatQueue // nil if the heartbeat never started

	// Guarded by the engine's beats.mu.
	due        time.Time     // when to extend next, while queued
	prev, next *heartbeat    // neighbours in q, while queued
	queued     bool          // in q, waiting for due
	stopped    bool          // stopHeartbeat was called: do not extend or queue again
	running    chan struct{} // closed when the extension in flight ends; nil if none
	l          *lease        // the lease it extends, while queued or extending
}

// beats is an engine's heartbeat scheduler. Its zero value is ready.
type beats struct {
	mu     sync.Mutex                   // guards queues, every queue and the queued heartbeats' fields
	queues map[time.Duration]*beatQueue // by interval: one per operation's lock/3
}

// beatQueue holds the heartbeats of one interval in the order they are due:
// each is queued for now + every, so appending keeps the order.
type beatQueue struct {
	b          *beats
	every      time.Duration
	head, tail *heartbeat
	timer      *time.Timer // runs fire; nil until first armed
	armed      bool        // timer is set
}

// queue returns the queue of interval every, creating it. b.mu is held.
func (b *beats) queue(every time.Duration) *beatQueue {
	q := b.queues[every]
	if q == nil {
		if b.queues == nil {
			b.queues = make(map[time.Duration]*beatQueue)
		}
		q = &beatQueue{b: b, every: every}
		b.queues[every] = q
	}
	return q
}

// push queues h to extend every from from (now, or a moment ago), arming
// the timer if it is not set. b.mu is held.
func (q *beatQueue) push(h *heartbeat, from time.Time) {
	h.due, h.queued = from.Add(q.every), true
	h.prev, h.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = h
	} else {
		q.head = h
	}
	q.tail = h
	if !q.armed {
		q.arm(q.every)
	}
}

// remove takes h out of q. b.mu is held.
func (q *beatQueue) remove(h *heartbeat) {
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		q.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else {
		q.tail = h.prev
	}
	h.prev, h.next, h.queued = nil, nil, false
}

// arm sets the timer to fire in d. b.mu is held.
func (q *beatQueue) arm(d time.Duration) {
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
	} else {
		q.timer.Reset(d)
	}
	q.armed = true
}

// fire runs on the timer's goroutine: it starts the extension of every
// heartbeat that is due, and arms the timer for the next one. A heartbeat
// stopped meanwhile is no longer queued; the timer may then fire with
// nothing due, and only arms itself again.
func (q *beatQueue) fire() {
	q.b.mu.Lock()
	defer q.b.mu.Unlock()
	now := time.Now()
	for h := q.head; h != nil && !h.due.After(now); h = q.head {
		q.remove(h)
		h.running = make(chan struct{})
		go h.l.tick()
	}
	q.armed = false
	if q.head != nil {
		q.arm(q.head.due.Sub(now))
	}
}

// startHeartbeat starts extending the lease until stopHeartbeat is called
// (unless the heartbeat is off). The heartbeat ends by itself when the lease
// turns out to be lost.
func (l *lease) startHeartbeat(ctx context.Context) {
	if l.e.cfg.noHeartbeat {
		return
	}
	h := &l.hb
	h.ctx, h.lock, h.l = ctx, l.k.op.lock(), l
	b := &l.e.beats
	b.mu.Lock()
	h.q = b.queue(max(h.lock/3, time.Millisecond))
	h.q.push(h, l.extended) // when the lease was taken, just before: no clock reading on the way to the handler
	b.mu.Unlock()
}

// tick runs on a goroutine of its own: one extension, then queue again.
func (l *lease) tick() {
	h := &l.hb
	start := time.Now()
	err := l.extend(h.ctx, h.lock)

	b := &l.e.beats
	b.mu.Lock()
	if err == nil {
		l.extended = start
	}
	close(h.running)
	h.running = nil
	if !errors.Is(err, idemstore.ErrNotOwner) && !h.stopped {
		h.q.push(h, time.Now())
	}
	b.mu.Unlock()
}

// stopHeartbeat ends the heartbeat and waits for an extension in flight, so
// none runs after it returns. It may be called more than once, and when the
// heartbeat never started.
func (l *lease) stopHeartbeat() {
	h := &l.hb
	if h.q == nil {
		return
	}
	b := &l.e.beats
	b.mu.Lock()
	h.stopped = true
	if h.queued {
		h.q.remove(h)
	}
	running := h.running
	b.mu.Unlock()
	if running != nil {
		<-running
	}
}

// extend pushes the lease deadline. It returns nil when extended,
// idemstore.ErrNotOwner once the lease is lost, or the store's error; it reports the
// failures. It runs detached from the request's cancellation and bounded by
// the store timeout, like completion and release.
func (l *lease) extend(ctx context.Context, lock time.Duration) error {
	sctx, s := l.startCall(ctx, "extend")
	err := l.e.store.Extend(l.e.deadlines.context(sctx), l.k.storageKey, l.token, lock)
	s.done(Event{Err: err})
	if err == nil {
		return nil
	}
	ev := Event{Fence: l.info.Fence, Err: err}
	if errors.Is(err, idemstore.ErrNotOwner) {
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost while the handler runs")
		return err
	}
	l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: extend failed")
	return err
}

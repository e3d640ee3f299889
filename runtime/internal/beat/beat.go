// Package beat runs periodic work for many tasks at once without a
// goroutine or a timer per task: the engine's heartbeats, which extend the
// leases of running handlers.
package beat

import (
	"sync"
	"time"
)

// Task is the work of a [Beat].
type Task interface {
	// Beat runs on a goroutine of its own each time the beat is due, and
	// returns whether to beat again.
	Beat() (again bool)
}

// Scheduler runs beats. Beats of one interval wait in one queue, first due
// first, behind one timer armed for the first, so starting and stopping a
// beat is a list insertion and a removal under a lock, and a beat stopped
// before it is first due costs no timer and no allocation. Its zero value is
// ready; it is safe for concurrent use.
type Scheduler struct {
	mu     sync.Mutex               // guards queues, every queue and the queued beats' fields
	queues map[time.Duration]*queue // by interval
}

// Beat is one task's place in a [Scheduler], kept by the task's owner (its
// zero value is ready) from [Scheduler.Start] to [Beat.Stop].
type Beat struct {
	q    *queue // nil if the beat never started
	task Task

	// Guarded by the scheduler's mu.
	due        time.Time     // when to run next, while queued
	prev, next *Beat         // neighbours in q, while queued
	queued     bool          // in q, waiting for due
	stopped    bool          // Stop was called: do not run or queue again
	running    chan struct{} // closed when the run in flight ends; nil if none
}

// queue holds the beats of one interval in the order they are due: each is
// queued for now + every, so appending keeps the order.
type queue struct {
	s          *Scheduler
	every      time.Duration
	head, tail *Beat
	timer      *time.Timer // runs fire; nil until first armed
	armed      bool        // timer is set
}

// Start has task's Beat run every interval from from (now, or a moment
// ago), on a goroutine of its own each time, until b is stopped or a run
// returns false. b must not have been started before.
func (s *Scheduler) Start(b *Beat, task Task, every time.Duration, from time.Time) {
	b.task = task
	s.mu.Lock()
	b.q = s.queue(every)
	b.q.push(b, from)
	s.mu.Unlock()
}

// Stop ends the beat and waits for a run in flight, so none runs after it
// returns. It may be called more than once, and when the beat never
// started.
func (b *Beat) Stop() {
	if b.q == nil {
		return
	}
	s := b.q.s
	s.mu.Lock()
	b.stopped = true
	if b.queued {
		b.q.remove(b)
	}
	running := b.running
	s.mu.Unlock()
	if running != nil {
		<-running
	}
}

// queue returns the queue of interval every, creating it. s.mu is held.
func (s *Scheduler) queue(every time.Duration) *queue {
	q := s.queues[every]
	if q == nil {
		if s.queues == nil {
			s.queues = make(map[time.Duration]*queue)
		}
		q = &queue{s: s, every: every}
		s.queues[every] = q
	}
	return q
}

// push queues b to run every from from, arming the timer if it is not set.
// s.mu is held.
func (q *queue) push(b *Beat, from time.Time) {
	b.due, b.queued = from.Add(q.every), true
	b.prev, b.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = b
	} else {
		q.head = b
	}
	q.tail = b
	if !q.armed {
		q.arm(q.every)
	}
}

// remove takes b out of q. s.mu is held.
func (q *queue) remove(b *Beat) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		q.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		q.tail = b.prev
	}
	b.prev, b.next, b.queued = nil, nil, false
}

// arm sets the timer to fire in d. s.mu is held.
func (q *queue) arm(d time.Duration) {
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
	} else {
		q.timer.Reset(d)
	}
	q.armed = true
}

// fire runs on the timer's goroutine: it starts the run of every beat that
// is due, and arms the timer for the next one. A beat stopped meanwhile is
// no longer queued; the timer may then fire with nothing due, and only
// arms itself again.
func (q *queue) fire() {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	now := time.Now()
	for b := q.head; b != nil && !b.due.After(now); b = q.head {
		q.remove(b)
		b.running = make(chan struct{})
		go q.run(b)
	}
	q.armed = false
	if q.head != nil {
		q.arm(q.head.due.Sub(now))
	}
}

// run runs b's task once, then queues b again unless it was stopped or the
// task is done.
func (q *queue) run(b *Beat) {
	again := b.task.Beat()
	q.s.mu.Lock()
	close(b.running)
	b.running = nil
	if again && !b.stopped {
		q.push(b, time.Now())
	}
	q.s.mu.Unlock()
}

package beat

import (
	"sync/atomic"
	"testing"
	"time"
)

// counter is a Task that counts its runs, tells each on ran, and asks for
// another run while fewer than last have run (last 0: always).
type counter struct {
	runs atomic.Int32
	last int32
	ran  chan int32
}

func (c *counter) Beat() bool {
	n := c.runs.Add(1)
	c.ran <- n
	return c.last == 0 || n < c.last
}

// TestBeatRunsUntilStopped: beats of one interval run again and again,
// each on its own schedule, and Stop takes a beat out for good: after it
// returns, no run is in flight and the beat is not queued, while the other
// beats of its queue go on.
func TestBeatRunsUntilStopped(t *testing.T) {
	var s Scheduler
	a, b := &counter{ran: make(chan int32, 1)}, &counter{ran: make(chan int32, 1)}
	var ba, bb Beat
	s.Start(&ba, a, time.Millisecond, time.Now())
	s.Start(&bb, b, time.Millisecond, time.Now())
	for range 3 {
		<-a.ran
		<-b.ran
	}
	go func() { // the run Stop may wait for
		for range a.ran {
		}
	}()
	ba.Stop()
	s.mu.Lock()
	queued, running := ba.queued, ba.running
	s.mu.Unlock()
	if queued || running != nil {
		t.Fatalf("after Stop: queued %v, running %v; want neither", queued, running != nil)
	}
	after := a.runs.Load()
	for range 3 { // b goes on
		<-b.ran
	}
	bb.Stop()
	if got := a.runs.Load(); got != after {
		t.Errorf("the stopped beat ran %d times more", got-after)
	}
	ba.Stop() // twice: nothing happens
}

// TestBeatEndsWhenTheTaskSaysSo: a run that returns false is the last.
func TestBeatEndsWhenTheTaskSaysSo(t *testing.T) {
	var s Scheduler
	c := &counter{last: 2, ran: make(chan int32, 1)}
	var b Beat
	s.Start(&b, c, time.Millisecond, time.Now())
	<-c.ran
	<-c.ran
	b.Stop() // waits for the second run to settle
	s.mu.Lock()
	queued := b.queued
	s.mu.Unlock()
	if n := c.runs.Load(); n != 2 || queued {
		t.Errorf("runs %d, queued %v; want 2 runs and the beat out of its queue", n, queued)
	}
}

// TestBeatStoppedBeforeDue: a beat stopped before it is due never runs,
// and costs no allocation once its queue exists.
func TestBeatStoppedBeforeDue(t *testing.T) {
	var s Scheduler
	c := &counter{ran: make(chan int32, 1)}
	var never Beat
	never.Stop() // never started: nothing happens
	var first Beat
	s.Start(&first, c, time.Hour, time.Now()) // creates the queue, arms its timer

	var b Beat // kept by its owner, as a lease keeps its heartbeat's
	n := testing.AllocsPerRun(100, func() {
		b = Beat{}
		s.Start(&b, c, time.Hour, time.Now())
		b.Stop()
	})
	first.Stop()
	if n != 0 {
		t.Errorf("start and stop before due allocate %v times", n)
	}
	if got := c.runs.Load(); got != 0 {
		t.Errorf("ran %d times, want none", got)
	}
}

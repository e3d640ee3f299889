package idem

import (
	"testing"
	"time"
)

func TestConflictRetryAfterBounds(t *testing.T) {
	e := NewEngine(nopStore{})
	op, other := &Operation{ID: "a"}, &Operation{ID: "b"}
	if got := e.conflictRetryAfter(op, 30*time.Second); got != time.Second {
		t.Errorf("no run yet: %v, want 1s", got)
	}
	e.runTimes.observe(op, 2500*time.Millisecond)
	if got := e.conflictRetryAfter(op, 30*time.Second); got != 2500*time.Millisecond {
		t.Errorf("one 2.5s run: %v, want 2.5s", got)
	}
	if got := e.conflictRetryAfter(op, 2*time.Second); got != 2*time.Second {
		t.Errorf("lease remaining 2s: %v, want 2s (at most the remaining lease)", got)
	}
	if got := e.conflictRetryAfter(op, 10*time.Millisecond); got != time.Second {
		t.Errorf("lease remaining 10ms: %v, want 1s (at least 1s)", got)
	}
	if got := e.conflictRetryAfter(other, 30*time.Second); got != time.Second {
		t.Errorf("another operation: %v, want 1s (estimates are per operation)", got)
	}
	for range 20 {
		e.runTimes.observe(op, 100*time.Millisecond)
	}
	if got := e.runTimes.estimate(op); got < 100*time.Millisecond || got > 110*time.Millisecond {
		t.Errorf("after 20 runs of 100ms: estimate %v, want it to follow them", got)
	}
	if n := testing.AllocsPerRun(100, func() { e.runTimes.observe(op, time.Millisecond) }); n != 0 {
		t.Errorf("observe allocates %v times", n)
	}
}

// nopStore is a Store for tests that never reach it.
type nopStore struct{ Store }

package idem

import (
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestConflictRetryAfterBounds: a 409's Retry-After is the operation's
// estimated run time, at least 1s and at most the remaining lease.
func TestConflictRetryAfterBounds(t *testing.T) {
	e := NewEngine(nopStore{})
	op, other := &idemop.Operation{ID: "a"}, &idemop.Operation{ID: "b"}
	if got := e.conflictRetryAfter(op, 30*time.Second); got != time.Second {
		t.Errorf("no run yet: %v, want 1s", got)
	}
	e.runs.Observe(op, 2500*time.Millisecond)
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
}

// nopStore is a Store for tests that never reach it.
type nopStore struct{ idemstore.Store }

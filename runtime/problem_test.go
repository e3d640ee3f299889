package idem

import (
	"testing"
	"time"
)

func TestConflictRetryAfterAtLeastOne(t *testing.T) {
	if got := conflictProblem(10 * time.Millisecond).Response().Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After for 10ms = %q, want 1", got)
	}
	if got := conflictProblem(2001 * time.Millisecond).Response().Header.Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After for 2.001s = %q, want 3 (rounded up)", got)
	}
}

package pgstore

import (
	"testing"
	"time"
)

// TestLeaseLeft: a conflict reports the lease's remainder rounded up to
// whole milliseconds and never less than one, as the read's SQL did
// (greatest(ceil(ms), 1)) before the rounding moved into the store.
func TestLeaseLeft(t *testing.T) {
	for _, c := range []struct{ left, want time.Duration }{
		{-time.Hour, time.Millisecond},
		{0, time.Millisecond},
		{time.Microsecond, time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{time.Millisecond + time.Microsecond, 2 * time.Millisecond},
		{29*time.Second + 999*time.Millisecond + 1, 30 * time.Second},
		{25*time.Hour + 500*time.Microsecond, 25*time.Hour + time.Millisecond},
	} {
		if got := leaseLeft(c.left); got != c.want {
			t.Errorf("leaseLeft(%v) = %v, want %v", c.left, got, c.want)
		}
	}
}

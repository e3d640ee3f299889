package leaseleft

import (
	"testing"
	"time"
)

// TestRound: a lease's remainder rounded up to whole milliseconds and
// never less than one, as the stores' SQL rounded it (greatest(ceil(ms),
// 1)) before the rounding moved here.
func TestRound(t *testing.T) {
	for _, c := range []struct{ left, want time.Duration }{
		{-time.Hour, time.Millisecond},
		{0, time.Millisecond},
		{time.Microsecond, time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{time.Millisecond + time.Microsecond, 2 * time.Millisecond},
		{29*time.Second + 999*time.Millisecond + 1, 30 * time.Second},
		{25*time.Hour + 500*time.Microsecond, 25*time.Hour + time.Millisecond},
	} {
		if got := Round(c.left); got != c.want {
			t.Errorf("Round(%v) = %v, want %v", c.left, got, c.want)
		}
	}
}

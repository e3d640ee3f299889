package idem

import (
	"testing"
	"time"
)

// TestBurstLog: the first unacknowledged completion of a burst is logged,
// the rest of the burst only once a minute, with the count of those not
// logged; after ten quiet seconds the next one starts a new burst.
func TestBurstLog(t *testing.T) {
	var b burstLog
	t0 := time.Unix(1_700_000_000, 0)
	for _, w := range []struct {
		at      time.Duration
		log     bool
		skipped int
	}{
		{0, true, 0},
		{1 * time.Second, false, 0},
		{9 * time.Second, false, 0},
		{18 * time.Second, false, 0},
		{27 * time.Second, false, 0},
		{36 * time.Second, false, 0},
		{45 * time.Second, false, 0},
		{54 * time.Second, false, 0},
		{61 * time.Second, true, 7}, // a minute after the burst's line: the seven since
		{65 * time.Second, false, 0},
		{80 * time.Second, true, 1}, // after 15 quiet seconds: a new burst
	} {
		if skipped, log := b.take(t0.Add(w.at)); log != w.log || skipped != w.skipped {
			t.Errorf("event at %v: log %v, skipped %d; want %v, %d", w.at, log, skipped, w.log, w.skipped)
		}
	}
}

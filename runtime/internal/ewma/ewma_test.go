package ewma

import (
	"testing"
	"time"
)

// TestDurations: the first observation is the estimate, later ones pull it
// by a quarter of the difference, keys keep apart, and observing a known
// key allocates nothing.
func TestDurations(t *testing.T) {
	var d Durations[*int]
	a, b := new(int), new(int)
	if got := d.Estimate(a); got != 0 {
		t.Errorf("nothing observed: %v, want 0", got)
	}
	d.Observe(a, 2*time.Second)
	if got := d.Estimate(a); got != 2*time.Second {
		t.Errorf("one 2s run: %v, want 2s", got)
	}
	d.Observe(a, 6*time.Second)
	if got := d.Estimate(a); got != 3*time.Second {
		t.Errorf("then a 6s run: %v, want 3s (a quarter of the way)", got)
	}
	if got := d.Estimate(b); got != 0 {
		t.Errorf("another key: %v, want 0", got)
	}
	for range 40 {
		d.Observe(a, 100*time.Millisecond)
	}
	if got := d.Estimate(a); got < 100*time.Millisecond || got > 101*time.Millisecond {
		t.Errorf("after 40 runs of 100ms: %v, want it to follow them", got)
	}
	d.Observe(b, 0)
	if got := d.Estimate(b); got != 1 {
		t.Errorf("a 0s run: %v, want 1ns (0 stands for nothing observed)", got)
	}
	if n := testing.AllocsPerRun(100, func() { d.Observe(a, time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
}

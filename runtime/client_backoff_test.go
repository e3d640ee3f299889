package idem

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

func TestBackoffCap(t *testing.T) {
	p := idemop.DefaultRetryPolicy()
	want := []time.Duration{
		200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second,
	}
	for retry, w := range want {
		if got := backoffCap(p, retry); got != w {
			t.Errorf("backoffCap(retry %d) = %v, want %v", retry, got, w)
		}
	}
	// A huge exponent overflows float64 to +Inf; the cap still holds.
	if got := backoffCap(p, 5000); got != p.MaxInterval {
		t.Errorf("backoffCap(retry 5000) = %v, want %v", got, p.MaxInterval)
	}
	p.Multiplier = 1
	if got := backoffCap(p, 7); got != p.InitialInterval {
		t.Errorf("multiplier 1: backoffCap = %v, want %v", got, p.InitialInterval)
	}
}

// TestBackoffFullJitter draws many waits with a fixed seed and checks that
// each lies in [0, cap) and that they are spread uniformly: mean cap/2,
// variance cap²/12, a tenth of them in the top tenth. For N uniform draws the
// standard deviation of the mean is cap/sqrt(12N), about 0.0009·cap for
// N = 100 000, so a tolerance of 0.005·cap is more than five deviations; the
// seed is fixed anyway, so the test cannot flake. The retry numbers include
// ones where the cap has reached MaxInterval: jitter applied before the cap
// would pile the draws up at MaxInterval and fail the mean and the top-tenth
// checks.
func TestBackoffFullJitter(t *testing.T) {
	const n = 100_000
	p := idemop.DefaultRetryPolicy()
	c := NewCaller(WithRand(rand.New(rand.NewPCG(1, 2))))
	for _, retry := range []int{0, 2, 5, 20} {
		limit := backoffCap(p, retry)
		var sum, sumSq float64
		top := 0
		for range n {
			w := c.jitter(limit)
			if w < 0 || w >= limit {
				t.Fatalf("retry %d: wait %v outside [0, %v)", retry, w, limit)
			}
			x := float64(w) / float64(limit)
			sum += x
			sumSq += x * x
			if x >= 0.9 {
				top++
			}
		}
		mean := sum / n
		variance := sumSq/n - mean*mean
		if math.Abs(mean-0.5) > 0.005 {
			t.Errorf("retry %d: mean %.4f·cap, want 0.5·cap ± 0.005", retry, mean)
		}
		if math.Abs(variance-1.0/12) > 0.002 {
			t.Errorf("retry %d: variance %.4f·cap², want %.4f ± 0.002", retry, variance, 1.0/12)
		}
		if frac := float64(top) / n; math.Abs(frac-0.1) > 0.005 {
			t.Errorf("retry %d: %.4f of the draws in the top tenth, want 0.1 ± 0.005", retry, frac)
		}
	}
}

func TestBackoffJitterDefaultSource(t *testing.T) {
	var c Caller // zero value: the runtime's default source
	for range 1000 {
		if w := c.jitter(time.Second); w < 0 || w >= time.Second {
			t.Fatalf("wait %v outside [0, 1s)", w)
		}
	}
	if w := c.jitter(0); w != 0 {
		t.Fatalf("jitter(0) = %v, want 0", w)
	}
}

func TestBackoffSleepContext(t *testing.T) {
	if err := sleepContext(context.Background(), 0); err != nil {
		t.Fatalf("sleep 0: %v", err)
	}
	if err := sleepContext(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("sleep 1ns: %v", err)
	}
	// An hour-long sleep must end with the context. Were the wait not
	// selecting on ctx.Done, this test would hang until go test's timeout.
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if err := sleepContext(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep with cancelled context = %v, want context.Canceled", err)
	}
}

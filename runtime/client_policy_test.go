package idem

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

func TestRetryPolicyDefaults(t *testing.T) {
	d := idemop.DefaultRetryPolicy()
	if d.MaxAttempts != 5 || d.InitialInterval != 200*time.Millisecond || d.MaxInterval != 5*time.Second ||
		d.Multiplier != 2 || d.MaxElapsed != 30*time.Second || d.AttemptTimeout != 0 ||
		!slices.Equal(d.RetryOn, []int{409, 429, 502, 503, 504}) {
		t.Fatalf("DefaultRetryPolicy() = %+v", d)
	}
	d.RetryOn[0] = 500 // each call returns its own slice
	if idemop.DefaultRetryPolicy().RetryOn[0] != 409 {
		t.Fatal("DefaultRetryPolicy shares its RetryOn slice")
	}
	got := withDefaults(idemop.RetryPolicy{MaxAttempts: 2, AttemptTimeout: time.Second}, 0)
	want := idemop.DefaultRetryPolicy()
	want.MaxAttempts, want.AttemptTimeout, want.MaxElapsed = 2, time.Second, idemop.DefaultLock+30*time.Second
	if got.MaxAttempts != 2 || got.AttemptTimeout != time.Second || got.InitialInterval != want.InitialInterval ||
		got.MaxInterval != want.MaxInterval || got.Multiplier != want.Multiplier ||
		got.MaxElapsed != want.MaxElapsed || !slices.Equal(got.RetryOn, want.RetryOn) {
		t.Fatalf("withDefaults = %+v, want %+v", got, want)
	}
	if on := withDefaults(idemop.RetryPolicy{RetryOn: []int{}}, 0).RetryOn; on == nil || len(on) != 0 {
		t.Fatalf("an empty non-nil RetryOn became %v", on)
	}
	if !retriesStatus(want, 503) || retriesStatus(want, 500) || retriesStatus(want, 422) {
		t.Fatal("retriesStatus disagrees with RetryOn")
	}
}

// TestDefaultMaxElapsedOutlastsTheLock: a call's default time budget is
// the operation's lock plus a margin, so that a retry outlives the lease of
// a run whose process died; a budget the spec or the caller sets is kept.
func TestDefaultMaxElapsedOutlastsTheLock(t *testing.T) {
	for _, c := range []struct {
		lock, set, want time.Duration
	}{
		{0, 0, idemop.DefaultLock + 30*time.Second},
		{5 * time.Second, 0, 35 * time.Second},
		{10 * time.Minute, 0, 10*time.Minute + 30*time.Second},
		{10 * time.Minute, 3 * time.Second, 3 * time.Second},
	} {
		if got := withDefaults(idemop.RetryPolicy{MaxElapsed: c.set}, c.lock).MaxElapsed; got != c.want {
			t.Errorf("lock %v, MaxElapsed %v: budget %v, want %v", c.lock, c.set, got, c.want)
		}
		if c.set == 0 && idemop.DefaultMaxElapsed(c.lock) != c.want {
			t.Errorf("DefaultMaxElapsed(%v) = %v, want %v", c.lock, idemop.DefaultMaxElapsed(c.lock), c.want)
		}
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	valid := []idemop.RetryPolicy{
		{},
		idemop.DefaultRetryPolicy(),
		{MaxAttempts: 1, Multiplier: 1, RetryOn: []int{}},
		{RetryOn: []int{408, 425, 500, 599}},
	}
	for _, p := range valid {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", p, err)
		}
	}
	invalid := []idemop.RetryPolicy{
		{MaxAttempts: -1},
		{InitialInterval: -time.Second},
		{MaxInterval: -time.Second},
		{MaxElapsed: -time.Second},
		{AttemptTimeout: -time.Second},
		{Multiplier: 0.5},
		{Multiplier: -2},
		{Multiplier: math.NaN()},
		{Multiplier: math.Inf(1)},
		{RetryOn: []int{400}},
		{RetryOn: []int{503, 422}},
		{RetryOn: []int{200}},
		{RetryOn: []int{600}},
	}
	for _, p := range invalid {
		if err := p.Validate(); !errors.Is(err, idemop.ErrInvalidPolicy) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidPolicy", p, err)
		}
	}
}

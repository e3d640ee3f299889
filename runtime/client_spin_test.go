package idem_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// conflictServer answers every request 409 with Retry-After set to
// retryAfter(now) and counts the requests. Past guard requests it answers
// 201, so that a client that spins ends and the test reports the count
// instead of running until the budget (on the fake clock, which a wait of
// 0 never advances, that would be forever).
func conflictServer(t *testing.T, retryAfter func() string, guard int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > guard {
			w.WriteHeader(http.StatusCreated)
			return
		}
		w.Header().Set("Retry-After", retryAfter())
		w.WriteHeader(http.StatusConflict)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestClientNoAdviceInRetryAfter: a Retry-After of 0, a date in the past or a
// value that does not parse gives no advice. The client waits its own
// growing backoff instead of retrying at once, and the attempt counts
// against MaxAttempts, as a 409 without Retry-After does: a server (or a
// proxy) answering 409 with Retry-After 0 forever gets MaxAttempts
// requests, not a request per round trip for the whole time budget.
func TestClientNoAdviceInRetryAfter(t *testing.T) {
	clock := newFakeClock()
	values := map[string]func() string{
		"zero":        func() string { return "0" },
		"past date":   func() string { return clock.Now().Add(-time.Hour).Format(http.TimeFormat) },
		"now as date": func() string { return clock.Now().Format(http.TimeFormat) },
		"unparseable": func() string { return "soon" },
		"negative":    func() string { return "-1" },
	}
	p := idemop.DefaultRetryPolicy()
	for name, value := range values {
		t.Run(name, func(t *testing.T) {
			srv, n := conflictServer(t, value, 100)
			var log hookLog
			call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep), idem.WithAttemptHook(log.hook),
				idem.WithRand(rand.New(rand.NewPCG(3, 4)))).
				Begin(&idemop.ClientOperation{ID: "CreatePet", Lock: 30 * time.Second})
			err := call.Run(context.Background(), sender(srv.Client(), srv.URL, call, nil))
			if got := n.Load(); got != int64(p.MaxAttempts) {
				t.Fatalf("%d requests, want %d (MaxAttempts)", got, p.MaxAttempts)
			}
			if !errors.Is(err, idem.ErrAttemptsExhausted) {
				t.Errorf("Run = %v, want ErrAttemptsExhausted", err)
			}
			limit := p.InitialInterval
			for i, info := range log.Infos()[:p.MaxAttempts-1] {
				if !info.Retry || info.RetryAfter || info.Wait <= 0 || info.Wait >= limit {
					t.Errorf("attempt %d: retry %v, wait %v (from Retry-After: %v); want the backoff, in (0, %v)",
						i+1, info.Retry, info.Wait, info.RetryAfter, limit)
				}
				limit = min(2*limit, p.MaxInterval)
			}
		})
	}
}

// TestClientNoAdviceBoundedByTime: with attempts to spare, the time budget
// bounds the same server: whichever of MaxAttempts and MaxElapsed ends
// first ends the call.
func TestClientNoAdviceBoundedByTime(t *testing.T) {
	clock := newFakeClock()
	srv, n := conflictServer(t, func() string { return "0" }, 1000)
	policy := idemop.RetryPolicy{MaxAttempts: 500, InitialInterval: time.Second, MaxInterval: time.Second, Multiplier: 1, MaxElapsed: 10 * time.Second}
	call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep), idem.WithRand(rand.New(rand.NewPCG(5, 6)))).
		Begin(createPet, idem.WithCallPolicy(policy))
	err := call.Run(context.Background(), sender(srv.Client(), srv.URL, call, nil))
	if !errors.Is(err, idem.ErrTimeExhausted) {
		t.Errorf("Run = %v, want ErrTimeExhausted", err)
	}
	// Waits drawn from [0, 1s) average 0.5 s: about 20 attempts fit in
	// 10 s; 100 would mean waits of 0.1 s on average.
	if got := n.Load(); got > 100 {
		t.Errorf("%d requests in a 10 s budget with a 1 s backoff", got)
	}
}

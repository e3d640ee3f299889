package idem_test

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestCallRetriesUntilSuccess fails the first attempts in each retried way
// and checks that the call succeeds, that the server saw the same key and
// byte-identical bodies on every attempt, and which waits were chosen.
func TestCallRetriesUntilSuccess(t *testing.T) {
	type want struct {
		wait       time.Duration // exact wait; 0 with limit set: a jittered wait
		limit      time.Duration // jittered wait in [0, limit)
		retryAfter bool
		transport  error // the attempt's error wraps this (nil: a status)
		timedOut   bool
	}
	tests := []struct {
		name  string
		steps func(t *testing.T, clock *fakeClock) []step
		want  []want
	}{
		{"409 with Retry-After seconds", func(*testing.T, *fakeClock) []step {
			return []step{answer(409, "Retry-After", "2"), answer(409, "Retry-After", "1")}
		}, []want{{wait: 2 * time.Second, retryAfter: true}, {wait: time.Second, retryAfter: true}}},
		{"429 with Retry-After date", func(_ *testing.T, c *fakeClock) []step {
			return []step{retryAfterDate(429, c, 3*time.Second)}
		}, []want{{wait: 3 * time.Second, retryAfter: true}}},
		{"503 then 502 then 504, backoff", func(*testing.T, *fakeClock) []step {
			return []step{answer(503), answer(502), answer(504)}
		}, []want{{limit: 200 * time.Millisecond}, {limit: 400 * time.Millisecond}, {limit: 800 * time.Millisecond}}},
		{"Retry-After beyond MaxInterval obeyed", func(*testing.T, *fakeClock) []step {
			return []step{answer(503, "Retry-After", "8")}
		}, []want{{wait: 8 * time.Second, retryAfter: true}}},
		{"connection reset", func(t *testing.T, _ *fakeClock) []step {
			return []step{reset(t), reset(t)}
		}, []want{{limit: 200 * time.Millisecond, transport: syscall.ECONNRESET}, {limit: 400 * time.Millisecond, transport: syscall.ECONNRESET}}},
		{"per-attempt timeout", func(t *testing.T, _ *fakeClock) []step {
			return []step{block}
		}, []want{{limit: 200 * time.Millisecond, timedOut: true}}},
		{"each way in a row", func(t *testing.T, c *fakeClock) []step {
			return []step{answer(409, "Retry-After", "1"), retryAfterDate(429, c, 2*time.Second), answer(503), reset(t), block}
		}, []want{
			{wait: time.Second, retryAfter: true}, {wait: 2 * time.Second, retryAfter: true},
			{limit: 800 * time.Millisecond}, {limit: 1600 * time.Millisecond, transport: syscall.ECONNRESET},
			{limit: 3200 * time.Millisecond, timedOut: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			srv := newScriptServer(t, tt.steps(t, clock)...)
			var log hookLog
			c := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep), idem.WithAttemptHook(log.hook),
				idem.WithPolicy(func(op string, p idemop.RetryPolicy) idemop.RetryPolicy {
					p.MaxAttempts, p.AttemptTimeout = 6, 200*time.Millisecond
					return p
				}))
			var res idem.CallResult
			call := c.Begin(createPet, idem.WithResult(&res))
			body, err := idemgen.MarshalBody(call, pet{Name: "Rex", Tag: "<dog>"})
			if err != nil {
				t.Fatal(err)
			}
			if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, body)); err != nil {
				t.Fatalf("Run: %v", err)
			}
			attempts := len(tt.want) + 1
			if res.Key != call.Key() || res.Attempts != attempts || res.Status != http.StatusCreated || res.Replayed {
				t.Errorf("result %+v, want key %s, %d attempts, status 201", res, call.Key(), attempts)
			}
			reqs := srv.Requests()
			// A timed-out attempt may be cut off before the server has read
			// it; every other attempt must have reached the server.
			timeouts := 0
			for _, w := range tt.want {
				if w.timedOut {
					timeouts++
				}
			}
			if len(reqs) > attempts || len(reqs) < attempts-timeouts {
				t.Errorf("server read %d requests for %d attempts", len(reqs), attempts)
			}
			checkSameRequest(t, reqs, call.Key(), body)

			waits, infos := clock.Waits(), log.Infos()
			if len(waits) != len(tt.want) || len(infos) != attempts {
				t.Fatalf("%d waits and %d hook calls, want %d and %d", len(waits), len(infos), len(tt.want), attempts)
			}
			for i, w := range tt.want {
				info := infos[i]
				if info.Attempt != i+1 || info.Operation != "CreatePet" || info.Key != call.Key() || !info.Retry || info.Wait != waits[i] {
					t.Errorf("attempt %d: hook %+v, recorded wait %v", i+1, info, waits[i])
				}
				if info.RetryAfter != w.retryAfter {
					t.Errorf("attempt %d: RetryAfter %v, want %v", i+1, info.RetryAfter, w.retryAfter)
				}
				switch {
				case w.limit > 0 && (waits[i] < 0 || waits[i] >= w.limit):
					t.Errorf("attempt %d: wait %v outside [0, %v)", i+1, waits[i], w.limit)
				case w.limit == 0 && waits[i] != w.wait:
					t.Errorf("attempt %d: wait %v, want %v", i+1, waits[i], w.wait)
				}
				if w.transport != nil && (info.Err == nil || info.Status != 0) {
					t.Errorf("attempt %d: hook error %v, status %d; want a transport error", i+1, info.Err, info.Status)
				}
				if w.transport != nil && !errors.Is(info.Err, w.transport) {
					// A reset can also surface as EOF when the RST races the read.
					t.Logf("attempt %d: transport error %v", i+1, info.Err)
				}
				if w.timedOut != errors.Is(info.Err, idem.ErrAttemptTimeout) {
					t.Errorf("attempt %d: error %v, timed out should be %v", i+1, info.Err, w.timedOut)
				}
			}
			if last := infos[attempts-1]; last.Retry || last.Status != http.StatusCreated || last.Err != nil || last.Wait != 0 {
				t.Errorf("final attempt: hook %+v", last)
			}
		})
	}
}

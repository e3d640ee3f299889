package idemotel_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemotel"
)

// TestClientInstruments runs calls whose attempts are scripted and checks
// what the attempt hook recorded.
func TestClientInstruments(t *testing.T) {
	tel := newTelemetry(t)
	hook, err := idemotel.NewAttemptHook(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	caller := idem.NewCaller(idem.WithAttemptHook(hook), idem.WithClock(time.Now, func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}))
	op := &idemop.ClientOperation{ID: "createPet"}
	// answer is an attempt: a status (with Retry-After 2 for 429, and
	// Idempotent-Replayed for replay), or a transport error.
	type answer struct {
		status int
		replay bool
		err    error
	}
	run := func(policy idemop.RetryPolicy, answers ...answer) error {
		call := caller.Begin(op, idem.WithCallPolicy(policy))
		n := 0
		return call.Run(context.Background(), func(context.Context) (*http.Response, error) {
			a := answers[min(n, len(answers)-1)]
			n++
			if a.err != nil {
				return nil, a.err
			}
			resp := &http.Response{StatusCode: a.status, Header: http.Header{}, Body: http.NoBody}
			if a.status == 429 {
				resp.Header.Set("Retry-After", "2")
			}
			if a.replay {
				resp.Header.Set(idemop.HeaderReplayed, "true")
			}
			return resp, nil
		})
	}
	fast := idemop.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Second}
	if err := run(fast, answer{status: 503}, answer{err: io.ErrUnexpectedEOF}, answer{status: 201, replay: true}); err != nil {
		t.Fatalf("503, EOF, replay: %v", err)
	}
	if err := run(fast, answer{status: 429}, answer{status: 409}); err == nil {
		t.Fatal("429, 409, 409: no error")
	}
	if err := run(fast, answer{status: 422}); err != nil {
		t.Fatalf("422: %v", err)
	}

	tel.wantCounts(t, "idem.client.attempts", []countRow{
		{map[string]string{"idem.operation": "createPet"}, 7},
		{map[string]string{"idem.replayed": "true", "http.response.status_code": "201"}, 1},
		{map[string]string{"error.type": "transport"}, 1},
		{map[string]string{"http.response.status_code": "409"}, 2},
	})
	tel.wantCounts(t, "idem.client.attempt.duration", []countRow{{map[string]string{"idem.operation": "createPet"}, 7}})
	tel.wantCounts(t, "idem.client.retries", []countRow{
		{map[string]string{}, 4},
		{map[string]string{"idem.retry.cause": "status", "http.response.status_code": "503"}, 1},
		{map[string]string{"idem.retry.cause": "transport"}, 1},
		{map[string]string{"idem.retry.cause": "status", "http.response.status_code": "429"}, 1},
		{map[string]string{"idem.retry.cause": "status", "http.response.status_code": "409"}, 1},
	})
	tel.wantCounts(t, "idem.client.wait.duration", []countRow{
		{map[string]string{}, float64(len(waits))},
		{map[string]string{"idem.retry_after": "true"}, 1},
	})
	tel.wantCounts(t, "idem.client.give_ups", []countRow{
		{map[string]string{}, 1},
		{map[string]string{"idem.retry.cause": "status", "http.response.status_code": "409"}, 1},
	})
	if len(waits) != 4 {
		t.Errorf("%d waits, want 4", len(waits))
	}
}

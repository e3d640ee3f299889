package idem_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestCallFinalAnswers checks that answers outside RetryOn end the call after
// one attempt with a nil error, and that a replay is reported.
func TestCallFinalAnswers(t *testing.T) {
	tests := []struct {
		status   int
		header   []string
		replayed bool
	}{
		{status: 400}, {status: 401}, {status: 404}, {status: 422}, {status: 500},
		{status: 200, header: []string{idemop.HeaderReplayed, "true"}, replayed: true},
		{status: 201, header: []string{idemop.HeaderReplayed, "false"}},
		{status: 400, header: []string{"Retry-After", "1"}}, // ignored: 400 is final
	}
	for _, tt := range tests {
		clock := newFakeClock()
		srv := newScriptServer(t, answer(tt.status, tt.header...))
		var log hookLog
		var res idem.CallResult
		call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep), idem.WithAttemptHook(log.hook)).
			Begin(createPet, idem.WithResult(&res))
		body, _ := idemgen.MarshalBody(call, pet{Name: "Rex"})
		if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, body)); err != nil {
			t.Errorf("status %d: Run = %v, want nil", tt.status, err)
		}
		infos := log.Infos()
		if n := len(srv.Requests()); n != 1 || len(infos) != 1 || len(clock.Waits()) != 0 {
			t.Errorf("status %d: %d requests, %d hook calls, %d waits; want 1, 1, 0", tt.status, n, len(infos), len(clock.Waits()))
			continue
		}
		if res.Attempts != 1 || res.Status != tt.status || res.Replayed != tt.replayed || res.Key != call.Key() {
			t.Errorf("status %d: result %+v", tt.status, res)
		}
		if infos[0].Retry || infos[0].GaveUp || infos[0].Status != tt.status || infos[0].Replayed != tt.replayed {
			t.Errorf("status %d: hook %+v", tt.status, infos[0])
		}
	}
}

func TestCallAttemptsExhausted(t *testing.T) {
	clock := newFakeClock()
	srv := newScriptServer(t, answer(503), answer(503), answer(503), answer(503))
	var res idem.CallResult
	call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).
		Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxAttempts: 3}), idem.WithResult(&res))
	body, _ := idemgen.MarshalBody(call, pet{Name: "Rex"})
	err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, body))
	var re *idem.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("Run = %v, want a *RetryError", err)
	}
	if re.Op != "CreatePet" || re.Key != call.Key() || re.Attempts != 3 || re.LastStatus != 503 ||
		re.LastResponse == nil || re.LastResponse.StatusCode != 503 {
		t.Errorf("RetryError %+v", re)
	}
	if !errors.Is(err, idem.ErrAttemptsExhausted) || !errors.Is(err, idem.ErrBudgetExceeded) {
		t.Errorf("Run = %v, want ErrAttemptsExhausted", err)
	}
	if got, want := err.Error(), "idem: CreatePet gave up after 3 attempts (last status 503): retry budget exceeded: attempts exhausted"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if n := len(srv.Requests()); n != 3 || len(clock.Waits()) != 2 {
		t.Errorf("%d requests and %d waits, want 3 and 2", n, len(clock.Waits()))
	}
	checkSameRequest(t, srv.Requests(), call.Key(), body)
	if res.Key != call.Key() || res.Attempts != 3 || res.Status != 503 {
		t.Errorf("result %+v", res)
	}
}

// TestCallTimeExhausted has the server take a second of the fake clock per
// attempt, so the third attempt ends after MaxElapsed.
func TestCallTimeExhausted(t *testing.T) {
	clock := newFakeClock()
	slow := func(s *scriptServer, w http.ResponseWriter, r *http.Request) {
		clock.Advance(time.Second)
		answer(503)(s, w, r)
	}
	srv := newScriptServer(t, slow, slow, slow, slow, slow)
	call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{
		MaxAttempts: 10, InitialInterval: time.Nanosecond, MaxInterval: time.Nanosecond, MaxElapsed: 2500 * time.Millisecond,
	}))
	err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil))
	var re *idem.RetryError
	if !errors.As(err, &re) || !errors.Is(err, idem.ErrTimeExhausted) || re.Attempts != 3 || re.LastStatus != 503 {
		t.Fatalf("Run = %v (%+v), want ErrTimeExhausted after 3 attempts", err, re)
	}
}

// TestCallRetryAfterBeyondBudget: a Retry-After beyond the remaining budget
// fails at once with the wait asked for, however small MaxInterval is
// (it caps the client's own backoff only).
func TestCallRetryAfterBeyondBudget(t *testing.T) {
	clock := newFakeClock()
	srv := newScriptServer(t, answer(429, "Retry-After", "60"))
	var log hookLog
	call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep), idem.WithAttemptHook(log.hook)).
		Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxInterval: 5 * time.Second, MaxElapsed: 30 * time.Second}))
	err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil))
	var re *idem.RetryError
	if !errors.As(err, &re) || !errors.Is(err, idem.ErrRetryAfterExceedsBudget) || !errors.Is(err, idem.ErrBudgetExceeded) {
		t.Fatalf("Run = %v, want ErrRetryAfterExceedsBudget", err)
	}
	if re.Attempts != 1 || re.LastStatus != 429 || re.Key != call.Key() || re.RetryAfter != time.Minute || len(clock.Waits()) != 0 {
		t.Errorf("RetryError %+v after %d waits; want 1 attempt, status 429, RetryAfter 1m, no wait", re, len(clock.Waits()))
	}
	if infos := log.Infos(); len(infos) != 1 || infos[0].Retry || !infos[0].GaveUp {
		t.Errorf("hook %+v, want one attempt that gave up", infos)
	}

	// The context's deadline (real time) is a budget too.
	srv = newScriptServer(t, answer(503, "Retry-After", "7200"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call = idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).
		Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxInterval: 3 * time.Hour, MaxElapsed: 10 * time.Hour}))
	if err := call.Run(ctx, sender(srv.client(), srv.URL, call, nil)); !errors.Is(err, idem.ErrRetryAfterExceedsBudget) || len(clock.Waits()) != 0 {
		t.Fatalf("Run = %v after %d waits, want ErrRetryAfterExceedsBudget and no wait", err, len(clock.Waits()))
	}
}

func TestCallTransportErrors(t *testing.T) {
	clock := newFakeClock()
	c := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep))

	// Refused (nothing listens, as while a server restarts): retried
	// beyond MaxAttempts, until the time runs out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	call := c.Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{
		MaxAttempts: 2, InitialInterval: time.Second, MaxInterval: time.Second, Multiplier: 1, MaxElapsed: 10 * time.Second}))
	err = call.Run(context.Background(), sender(http.DefaultClient, url, call, nil))
	var re *idem.RetryError
	if !errors.As(err, &re) || re.Attempts <= 2 || re.LastStatus != 0 || re.LastResponse != nil ||
		!errors.Is(err, idem.ErrTimeExhausted) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused: Run = %v (%+v), want ErrTimeExhausted wrapping ECONNREFUSED after more than 2 attempts", err, re)
	}
	// With MaxAttempts 1 (no retry), a refused connection is not retried.
	call = c.Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxAttempts: 1}))
	err = call.Run(context.Background(), sender(http.DefaultClient, url, call, nil))
	if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, idem.ErrAttemptsExhausted) {
		t.Errorf("refused, MaxAttempts 1: Run = %v (%+v), want ErrAttemptsExhausted after 1 attempt", err, re)
	}

	// An untrusted certificate and a bad URL are final at once.
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	call = c.Begin(createPet)
	err = call.Run(context.Background(), sender(http.DefaultClient, tlsSrv.URL, call, nil))
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &re) || re.Attempts != 1 || !errors.As(err, &unknownCA) {
		t.Errorf("certificate: Run = %v, want a RetryError wrapping x509.UnknownAuthorityError after 1 attempt", err)
	}
	call = c.Begin(createPet)
	err = call.Run(context.Background(), sender(http.DefaultClient, "ftp://example.test/", call, nil))
	if !errors.As(err, &re) || re.Attempts != 1 || errors.Is(err, idem.ErrBudgetExceeded) {
		t.Errorf("bad scheme: Run = %v, want a RetryError after 1 attempt", err)
	}
	call = c.Begin(createPet)
	err = call.Run(context.Background(), func(context.Context) (*http.Response, error) { return nil, nil })
	if !errors.Is(err, idem.ErrNoResponse) {
		t.Errorf("no response: Run = %v, want ErrNoResponse", err)
	}
}

// TestCallWaitsOutTheLock: a 409 with Retry-After (the key's run in
// progress, or its dead process's lease not lapsed yet) is waited out
// within the time budget, however many there are; the answer after it
// ends the call. A 409 without Retry-After counts as an attempt.
func TestCallWaitsOutTheLock(t *testing.T) {
	clock := newFakeClock()
	steps := []step{answer(502)}
	for range 12 {
		steps = append(steps, answer(409, "Retry-After", "1"))
	}
	srv := newScriptServer(t, append(steps, answer(201))...)
	var res idem.CallResult
	call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).Begin(&idemop.ClientOperation{ID: "CreatePet", Lock: 10 * time.Second}, idem.WithResult(&res))
	if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil)); err != nil {
		t.Fatalf("Run = %v, want the answer after 12 409s with Retry-After", err)
	}
	if res.Attempts != 14 || res.Status != 201 {
		t.Errorf("result %+v, want 14 attempts ending in 201", res)
	}

	// Past the budget (lock 5s + 30s), the call gives up.
	steps = nil
	for range 40 {
		steps = append(steps, answer(409, "Retry-After", "1"))
	}
	srv = newScriptServer(t, steps...)
	call = idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).Begin(&idemop.ClientOperation{ID: "CreatePet", Lock: 5 * time.Second})
	err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil))
	var re *idem.RetryError
	if !errors.As(err, &re) || !errors.Is(err, idem.ErrBudgetExceeded) || errors.Is(err, idem.ErrAttemptsExhausted) || re.Attempts != 35 {
		t.Errorf("Run = %v (%+v), want the time budget exceeded after 35 attempts (35s of Retry-After 1)", err, re)
	}

	// Without Retry-After, a 409 is an attempt like any other.
	srv = newScriptServer(t, answer(409), answer(409), answer(409))
	call = idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxAttempts: 3}))
	if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil)); !errors.As(err, &re) ||
		!errors.Is(err, idem.ErrAttemptsExhausted) || re.Attempts != 3 {
		t.Errorf("409 without Retry-After: Run = %v, want ErrAttemptsExhausted after 3 attempts", err)
	}
	// And MaxAttempts 1 still means no retry.
	srv = newScriptServer(t, answer(409, "Retry-After", "1"))
	call = idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxAttempts: 1}))
	if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil)); !errors.As(err, &re) || re.Attempts != 1 {
		t.Errorf("MaxAttempts 1: Run = %v, want a RetryError after 1 attempt", err)
	}
}

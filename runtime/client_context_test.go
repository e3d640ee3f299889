package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestCallCancelledDuringWait uses the real clock and an hour-long
// Retry-After wait: the call can only end if the wait selects on ctx.Done
// (otherwise go test's timeout fails it).
func TestCallCancelledDuringWait(t *testing.T) {
	srv := newScriptServer(t, answer(503, "Retry-After", "3600"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(info idem.AttemptInfo) {
		if info.Retry && info.Wait == time.Hour {
			go cancel() // while Run waits
		}
	}
	call := idem.NewCaller(idem.WithAttemptHook(hook)).
		Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{MaxInterval: 2 * time.Hour, MaxElapsed: 3 * time.Hour}))
	err := call.Run(ctx, sender(srv.client(), srv.URL, call, nil))
	var re *idem.RetryError
	if !errors.As(err, &re) || !errors.Is(err, context.Canceled) || re.Attempts != 1 || re.LastStatus != 503 {
		t.Fatalf("Run = %v (%+v), want context.Canceled after 1 attempt", err, re)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server read %d requests, want 1", n)
	}
}

func TestCallCancelledBeforeRun(t *testing.T) {
	srv := newScriptServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	call := idem.NewCaller().Begin(createPet)
	err := call.Run(ctx, sender(srv.client(), srv.URL, call, nil))
	var re *idem.RetryError
	if !errors.As(err, &re) || !errors.Is(err, context.Canceled) || re.Attempts != 0 || len(srv.Requests()) != 0 {
		t.Fatalf("Run = %v, want context.Canceled before any attempt", err)
	}
}

// TestCallCallerContextEndsDuringAttempt checks that the caller's own
// cancellation or deadline is not mistaken for a retryable timeout.
func TestCallCallerContextEndsDuringAttempt(t *testing.T) {
	for _, deadline := range []bool{false, true} {
		arrived := make(chan struct{})
		srv := newScriptServer(t, func(s *scriptServer, w http.ResponseWriter, r *http.Request) {
			close(arrived)
			block(s, w, r)
		})
		ctx, cancel := context.WithCancel(context.Background())
		want := context.Canceled
		if deadline {
			ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
			want = context.DeadlineExceeded
		} else {
			go func() {
				<-arrived
				cancel()
			}()
		}
		call := idem.NewCaller().Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{AttemptTimeout: time.Hour}))
		err := call.Run(ctx, sender(srv.client(), srv.URL, call, nil))
		cancel()
		var re *idem.RetryError
		if !errors.As(err, &re) || !errors.Is(err, want) || errors.Is(err, idem.ErrAttemptTimeout) || re.Attempts != 1 {
			t.Errorf("deadline %v: Run = %v, want %v after 1 attempt", deadline, err, want)
		}
	}
}

func TestCallInvalidSetup(t *testing.T) {
	srv := newScriptServer(t)
	hc := srv.client()
	call := idem.NewCaller().Begin(createPet, idem.WithCallPolicy(idemop.RetryPolicy{Multiplier: 0.5}))
	if err := call.Run(context.Background(), sender(hc, srv.URL, call, nil)); !errors.Is(err, idemop.ErrInvalidPolicy) {
		t.Errorf("invalid call policy: Run = %v, want ErrInvalidPolicy", err)
	}
	bad := idem.NewCaller(idem.WithPolicy(func(string, idemop.RetryPolicy) idemop.RetryPolicy {
		return idemop.RetryPolicy{RetryOn: []int{400}}
	}))
	call = bad.Begin(createPet)
	if err := call.Run(context.Background(), sender(hc, srv.URL, call, nil)); !errors.Is(err, idemop.ErrInvalidPolicy) {
		t.Errorf("invalid policy from WithPolicy: Run = %v, want ErrInvalidPolicy", err)
	}
	call = idem.NewCaller().Begin(createPet, idem.WithKey("bad\nkey"))
	if err := call.Run(context.Background(), sender(hc, srv.URL, call, nil)); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("invalid WithKey: Run = %v, want ErrInvalidKey", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server read %d requests, want none", n)
	}
}

func TestCallOptions(t *testing.T) {
	clock := newFakeClock()
	srv := newScriptServer(t, answer(409, "Retry-After", "1"), answer(201, idemop.HeaderReplayed, "true"))
	var gotOp string
	c := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep), idem.WithQuotedKeyHeader(false),
		idem.WithPolicy(func(op string, p idemop.RetryPolicy) idemop.RetryPolicy {
			gotOp = op
			if p.MaxAttempts != 5 || len(p.RetryOn) != 5 {
				t.Errorf("WithPolicy saw %+v, want the defaults applied", p)
			}
			return p
		}))
	var res idem.CallResult
	call := c.Begin(createPet, idem.WithKey("order-42"), idem.WithResult(&res))
	if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, nil)); err != nil {
		t.Fatal(err)
	}
	if gotOp != "CreatePet" || res != (idem.CallResult{Key: "order-42", Attempts: 2, Sent: 2, Status: 201, Replayed: true}) {
		t.Errorf("op %q, result %+v", gotOp, res)
	}
	for i, r := range srv.Requests() {
		if r.key != "order-42" {
			t.Errorf("request %d: bare key header %q, want order-42", i+1, r.key)
		}
	}
}

// TestCallBodyKey runs a Square-style operation whose key lives in the body.
func TestCallBodyKey(t *testing.T) {
	type payment struct {
		Amount int    `json:"amount"`
		Key    string `json:"idempotency_key,omitempty"`
	}
	op := &idemop.ClientOperation{ID: "CreatePayment", KeyPointer: "/idempotency_key"}
	for _, preset := range []string{"", "caller-chosen-1"} {
		clock := newFakeClock()
		srv := newScriptServer(t, answer(503), answer(502))
		call := idem.NewCaller(idem.WithClock(clock.Now, clock.Sleep)).Begin(op)
		body, err := idemgen.MarshalBody(call, &payment{Amount: 100, Key: preset})
		if err != nil {
			t.Fatal(err)
		}
		if preset != "" && call.Key() != preset {
			t.Errorf("key %q, want the body's %q", call.Key(), preset)
		}
		if err := call.Run(context.Background(), sender(srv.client(), srv.URL, call, body)); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("server read %d requests, want 3", len(reqs))
		}
		for i, r := range reqs {
			var got payment
			if err := json.Unmarshal(r.body, &got); err != nil || got.Key != call.Key() || string(r.body) != string(body) {
				t.Errorf("request %d: body %s, want %s with key %q", i+1, r.body, body, call.Key())
			}
			if r.key != "" {
				t.Errorf("request %d: key header %q on a body-key operation", i+1, r.key)
			}
		}
	}
}

package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/e2e/hooks/stdhooks"
	idem "github.com/idemgen/idemgen/runtime"
)

// recordingReceiver answers the statuses of answers in turn (the last one
// from then on), with their Retry-After, and records each delivery's id
// and body.
type recordingReceiver struct {
	mu         sync.Mutex // guards the fields below
	answers    []int
	retryAfter string
	ids        []string
	bodies     []string
}

func (rr *recordingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.ids = append(rr.ids, r.Header.Get("webhook-id"))
	rr.bodies = append(rr.bodies, string(body))
	status := rr.answers[min(len(rr.ids), len(rr.answers))-1]
	if status == http.StatusServiceUnavailable && rr.retryAfter != "" {
		w.Header().Set("Retry-After", rr.retryAfter)
	}
	w.WriteHeader(status)
}

// initiatorTo is the generated initiator with a clock that records the
// waits instead of sleeping.
func initiatorTo(t *testing.T, waits *[]time.Duration) *stdhooks.IdempotentWebhookInitiator {
	in, err := stdhooks.NewWebhookInitiator()
	if err != nil {
		t.Fatal(err)
	}
	return stdhooks.NewIdempotentWebhookInitiator(in, idem.WithClock(nil, func(_ context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return nil
	}))
}

// The initiator sends one event under one delivery id with the same bytes
// on every attempt, retries a 500 (which the receiver does not store) and
// a 503 no earlier than its Retry-After, and reports the id and attempts.
func TestWebhookInitiatorRetries(t *testing.T) {
	rr := &recordingReceiver{answers: []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusOK}, retryAfter: "3"}
	srv := httptest.NewServer(rr)
	defer srv.Close()
	var waits []time.Duration
	var res idem.CallResult
	resp, err := initiatorTo(t, &waits).OrderPaid(context.Background(), srv.URL+hookPath,
		stdhooks.OrderPaidEvent{Type: "order.paid", Order: "o_1", Amount: 1200}, idem.WithResult(&res))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || res.Attempts != 3 || res.Key == "" {
		t.Fatalf("status %d, result %+v: want 200 after 3 attempts under one id", resp.StatusCode, res)
	}
	for i := range rr.ids {
		if rr.ids[i] != res.Key || rr.bodies[i] != rr.bodies[0] {
			t.Errorf("attempt %d sent id %q and body %s, want %q and %s", i+1, rr.ids[i], rr.bodies[i], res.Key, rr.bodies[0])
		}
	}
	if len(waits) != 2 || waits[1] < 3*time.Second {
		t.Errorf("waits %v: want two, the second at least the 3s Retry-After", waits)
	}
}

// A final 4xx is not retried: the receiver refused the event for good
// (422: the id was used for another payload), and the initiator answers it
// at once, with no error, for the caller to see.
func TestWebhookInitiatorFinal4xx(t *testing.T) {
	rr := &recordingReceiver{answers: []int{http.StatusUnprocessableEntity}}
	srv := httptest.NewServer(rr)
	defer srv.Close()
	var waits []time.Duration
	resp, err := initiatorTo(t, &waits).OrderPaid(context.Background(), srv.URL+hookPath,
		stdhooks.OrderPaidEvent{Type: "order.paid", Order: "o_1", Amount: 1200}, idem.WithKey("evt_1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || len(rr.ids) != 1 || len(waits) != 0 {
		t.Errorf("status %d after %d attempts and waits %v: want one 422, not retried", resp.StatusCode, len(rr.ids), waits)
	}
	if rr.ids[0] != "evt_1" {
		t.Errorf("sent id %q, want the event's evt_1", rr.ids[0])
	}
}

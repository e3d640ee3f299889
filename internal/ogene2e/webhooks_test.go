package ogene2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/ogene2e/api"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// receiver is the ogen WebhookHandler of the tests: it counts its runs and,
// with a gate, holds the first.
type receiver struct {
	runs atomic.Int64
	gate *gate
}

func (rc *receiver) OrderShipped(context.Context, *api.Order) error {
	rc.runs.Add(1)
	if rc.gate != nil {
		rc.gate.hold()
	}
	return nil
}

var _ api.WebhookHandler = (*receiver)(nil)

// serveWebhook serves the orderShipped webhook of rc behind the layer.
func serveWebhook(t *testing.T, rc *receiver, store idemstore.Store) *httptest.Server {
	t.Helper()
	ws, err := api.NewWebhookServer(rc)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.WithIdempotentWebhooks(ws, store).Handler("orderShipped"))
	t.Cleanup(ts.Close)
	return ts
}

// deliver posts an orderShipped event with the delivery id ("" for none).
func deliver(t *testing.T, ts *httptest.Server, id, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if id != "" {
		req.Header.Set("webhook-id", id)
	}
	return do(t, ts, req)
}

const shipped = `{"id":"o-1","item":"book","run":1}`

func TestWebhookConcurrentDeliveriesRunOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		const n = 8
		rc := &receiver{gate: newGate()}
		ts := serveWebhook(t, rc, store)
		answers := make(chan answer, n)
		for range n {
			go func() { answers <- deliver(t, ts, "evt-1", shipped) }()
		}
		<-rc.gate.entered
		for range n - 1 {
			if a := <-answers; a.status != http.StatusConflict {
				t.Errorf("a delivery during the run: %d %q, want 409", a.status, a.body)
			}
		}
		close(rc.gate.release)
		if a := <-answers; a.status != http.StatusNoContent {
			t.Errorf("the run's answer: %d %q, want 204", a.status, a.body)
		}
		if got := rc.runs.Load(); got != 1 {
			t.Errorf("%d runs of the receiver, want 1", got)
		}
	})
}

func TestWebhookRedelivery(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		rc := &receiver{}
		ts := serveWebhook(t, rc, store)
		first := deliver(t, ts, "evt-2", shipped)
		again := deliver(t, ts, "evt-2", shipped)
		other := deliver(t, ts, "evt-2", strings.Replace(shipped, "book", "lamp", 1))
		missing := deliver(t, ts, "", shipped)
		switch {
		case first.status != http.StatusNoContent || first.replayed():
			t.Errorf("first delivery: %d replayed=%v, want 204 from the receiver", first.status, first.replayed())
		case again.status != http.StatusNoContent || !again.replayed():
			t.Errorf("redelivery: %d replayed=%v, want the replayed 204", again.status, again.replayed())
		case other.status != http.StatusUnprocessableEntity:
			t.Errorf("the id with another payload: %d %q, want 422", other.status, other.body)
		case missing.status != http.StatusBadRequest || missing.problemCode() != idemop.CodeMissingKey:
			t.Errorf("no delivery id: %d %q, want 400 missing-key", missing.status, missing.body)
		}
		if got := rc.runs.Load(); got != 1 {
			t.Errorf("%d runs of the receiver, want 1", got)
		}
	})
}

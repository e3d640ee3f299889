package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/gorilla/mux"

	"github.com/idemgen/idemgen/internal/e2e/hooks/chihooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/gorillahooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/stdhooks"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// The webhook and callback receivers: hooks/webhooks.yaml's orderPaid
// webhook and refundSettled callback, keyed by the Standard Webhooks header
// webhook-id, received through the generated WithIdempotentWebhooks and
// WithIdempotentCallbacks of every framework oapi-codegen generates
// receivers for, over every backend.

// hookPath and callbackPath are where the tests mount the webhook's and
// the callback's receivers.
const (
	hookPath     = "/hooks/payments"
	callbackPath = "/callbacks/refunds"
)

// payments is the user's receiver of orderPaid, whatever the framework: it
// counts its runs, answers 500 while failing is above zero, and, when hold
// is set, announces each run on entered and waits for hold to close.
type payments struct {
	runs    atomic.Int64
	failing atomic.Int64
	entered chan struct{}
	hold    chan struct{}
}

// receive is the receiver's work on one delivery's body: the status and
// JSON body of its answer.
func (p *payments) receive(_ context.Context, body []byte) (int, []byte) {
	n := p.runs.Add(1)
	if p.hold != nil {
		p.entered <- struct{}{}
		<-p.hold
	}
	if p.failing.Add(-1) >= 0 {
		return http.StatusInternalServerError, []byte(`{"error":"ledger unavailable"}`)
	}
	return http.StatusOK, fmt.Appendf(nil, `{"run":%d,"bytes":%d}`, n, len(body))
}

// netHTTPPayments is payments as the net/http receiver interface of
// std-http, chi and gorilla (one shape: each package's interface has it).
type netHTTPPayments struct{ *payments }

func (p netHTTPPayments) HandleRefundSettledCallback(w http.ResponseWriter, r *http.Request) {
	p.HandleOrderPaidWebhook(w, r)
}

func (p netHTTPPayments) HandleOrderPaidWebhook(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	status, out := p.receive(r.Context(), body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// receiver is one framework's generated receivers, of the webhook and of
// the callback, over a payments and a store.
type receiver struct {
	name    string
	handler func(p *payments, store idemstore.Store) http.Handler
}

// receivers are the generated webhook receivers of every framework.
func receivers() []receiver {
	return append(netHTTPReceivers(), frameworkReceivers()...)
}

// netHTTPReceivers are the std-http, chi and gorilla receivers; the
// handler functions' middlewares (none here) run before the idempotency
// layer.
func netHTTPReceivers() []receiver {
	return []receiver{
		{"std-http", func(p *payments, store idemstore.Store) http.Handler {
			m := http.NewServeMux()
			m.Handle("POST "+hookPath, stdhooks.OrderPaidWebhookHandler(stdhooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil))
			m.Handle("POST "+callbackPath, stdhooks.RefundSettledCallbackHandler(stdhooks.WithIdempotentCallbacks(netHTTPPayments{p}, store), nil))
			return recoverer(m)
		}},
		{"chi", func(p *payments, store idemstore.Store) http.Handler {
			r := chi.NewRouter()
			r.Method(http.MethodPost, hookPath, chihooks.OrderPaidWebhookHandler(chihooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil))
			r.Method(http.MethodPost, callbackPath, chihooks.RefundSettledCallbackHandler(chihooks.WithIdempotentCallbacks(netHTTPPayments{p}, store), nil))
			return recoverer(r)
		}},
		{"gorilla", func(p *payments, store idemstore.Store) http.Handler {
			r := mux.NewRouter()
			r.Handle(hookPath, gorillahooks.OrderPaidWebhookHandler(gorillahooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil)).Methods(http.MethodPost)
			r.Handle(callbackPath, gorillahooks.RefundSettledCallbackHandler(gorillahooks.WithIdempotentCallbacks(netHTTPPayments{p}, store), nil)).Methods(http.MethodPost)
			return recoverer(r)
		}},
	}
}

const (
	paid1 = `{"type":"order.paid","order":"o_1","amount":1200}`
	paid2 = `{"type":"order.paid","order":"o_1","amount":9900}`
)

// deliverTo returns a function that sends one delivery of a body with a
// delivery id (none for "") to path of h.
func deliverTo(t *testing.T, h http.Handler, path string) func(id, body string) answer {
	return func(id, body string) answer {
		t.Helper()
		if id == "" {
			return do(t, h, "POST", path, body)
		}
		return do(t, h, "POST", path, body, "webhook-id", id)
	}
}

// TestWebhookReceivers is the behaviour every generated receiver promises,
// one table of scenarios run against the webhook and the callback
// receivers of every framework over miniredis, real Redis and PostgreSQL.
func TestWebhookReceivers(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, deliver func(id, body string) answer, p *payments)
	}{
		{"a redelivery runs once and is answered as the first delivery was", func(t *testing.T, deliver func(id, body string) answer, p *payments) {
			first := deliver("msg_1", paid1)
			wantStatus(t, first, http.StatusOK)
			for range 3 {
				again := deliver("msg_1", "{ \"amount\": 1200, \"order\": \"o_1\", \"type\": \"order.paid\" }")
				wantStatus(t, again, http.StatusOK)
				if again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("redelivery answered %q (replayed %q), want %q replayed", again.body, again.header.Get("Idempotent-Replayed"), first.body)
				}
			}
			wantCount(t, "the receiver", p.runs.Load(), 1)
		}},
		{"8 concurrent deliveries run once", func(t *testing.T, deliver func(id, body string) answer, p *payments) {
			p.entered, p.hold = make(chan struct{}, 8), make(chan struct{})
			answers := make(chan answer, 8)
			for range 8 {
				go func() { answers <- deliver("msg_1", paid1) }()
			}
			<-p.entered // one delivery runs and holds; the others must be answered meanwhile
			for range 7 {
				select {
				case a := <-answers:
					wantStatus(t, a, http.StatusConflict)
				case <-p.entered:
					close(p.hold)
					t.Fatal("a second delivery of one id ran while the first was running")
				}
			}
			close(p.hold)
			wantStatus(t, <-answers, http.StatusOK)
			wantCount(t, "the receiver", p.runs.Load(), 1)
		}},
		{"an id reused with another payload is 422 and does not run", func(t *testing.T, deliver func(id, body string) answer, p *payments) {
			wantStatus(t, deliver("msg_1", paid1), http.StatusOK)
			a := deliver("msg_1", paid2)
			wantStatus(t, a, http.StatusUnprocessableEntity)
			if code := problemCode(t, a); code != "fingerprint-mismatch" {
				t.Errorf("code = %q, want fingerprint-mismatch", code)
			}
			wantCount(t, "the receiver", p.runs.Load(), 1)
		}},
		{"a delivery without an id is 400 and does not run", func(t *testing.T, deliver func(id, body string) answer, p *payments) {
			a := deliver("", paid1)
			wantStatus(t, a, http.StatusBadRequest)
			if code := problemCode(t, a); code != "missing-key" {
				t.Errorf("code = %q, want missing-key", code)
			}
			wantCount(t, "the receiver", p.runs.Load(), 0)
		}},
		{"a 500 is not stored: the redelivery runs again", func(t *testing.T, deliver func(id, body string) answer, p *payments) {
			p.failing.Store(1)
			wantStatus(t, deliver("msg_1", paid1), http.StatusInternalServerError)
			again := deliver("msg_1", paid1)
			wantStatus(t, again, http.StatusOK)
			if again.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("the redelivery after a 500 was a replay")
			}
			wantStatus(t, deliver("msg_1", paid1), http.StatusOK)
			wantCount(t, "the receiver", p.runs.Load(), 2)
		}},
		{"two ids are two events", func(t *testing.T, deliver func(id, body string) answer, p *payments) {
			wantStatus(t, deliver("msg_1", paid1), http.StatusOK)
			wantStatus(t, deliver("msg_2", paid1), http.StatusOK)
			wantCount(t, "the receiver", p.runs.Load(), 2)
		}},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, rc := range receivers() {
				for _, path := range []string{hookPath, callbackPath} {
					t.Run(rc.name+path, func(t *testing.T) {
						for _, sc := range scenarios {
							t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
								p := &payments{}
								sc.run(t, deliverTo(t, rc.handler(p, b.store(t)), path), p)
							})
						}
					})
				}
			}
		})
	}
}

package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/e2e/hooks/stdhooks"
	"github.com/idemgen/idemgen/internal/probe"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// probeHooks runs idemctl probe's checks against the webhook and the
// callback of hooks/webhooks.yaml received by srv at hookPath and
// callbackPath, and returns the table.
func probeHooks(t *testing.T, srv *httptest.Server) []probe.Row {
	t.Helper()
	examples := filepath.Join(t.TempDir(), "examples.yaml")
	body := "  body: {type: order.paid, order: o_1, amount: 1200}\n"
	if err := os.WriteFile(examples, []byte("OrderPaid:\n"+body+"RefundSettled:\n"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(path string) *url.URL {
		u, err := url.Parse(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	rows, err := probe.Probe(context.Background(), probe.Config{
		Spec:       "hooks/webhooks.yaml",
		Examples:   examples,
		BaseURL:    at("/"),
		Events:     map[string]*url.URL{"orderPaid": at(hookPath), "RefundSettled": at(callbackPath)},
		Concurrent: 8,
		Client:     &http.Client{Timeout: 30 * time.Second},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// The generated webhook and callback receivers, on real Redis, keep the
// contract the probe checks: every check of both passes.
func TestProbeWebhookReceivers(t *testing.T) {
	store := redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
	p := &payments{}
	m := http.NewServeMux()
	m.Handle("POST "+hookPath, stdhooks.OrderPaidWebhookHandler(stdhooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil))
	m.Handle("POST "+callbackPath, stdhooks.RefundSettledCallbackHandler(stdhooks.WithIdempotentCallbacks(netHTTPPayments{p}, store), nil))
	srv := httptest.NewServer(m)
	defer srv.Close()

	rows := probeHooks(t, srv)
	checked := map[string]int{}
	for _, r := range rows {
		checked[r.Operation]++
		if r.Result != probe.Pass {
			t.Errorf("%s: %s: %s, got %s", r.Operation, r.Check, r.Result, r.Got)
		}
	}
	if checked["OrderPaid"] < 5 || checked["RefundSettled"] < 5 {
		t.Errorf("checks by operation: %v, want every check of the webhook and the callback", checked)
	}
}

// The same webhook route mounted without the wrapper fails the probe (the
// callback, still wrapped, passes): a route left unprotected is caught.
func TestProbeUnwrappedWebhookRoute(t *testing.T) {
	store := redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
	p := &payments{}
	m := http.NewServeMux()
	m.Handle("POST "+hookPath, stdhooks.OrderPaidWebhookHandler(netHTTPPayments{p}, nil)) // no WithIdempotentWebhooks
	m.Handle("POST "+callbackPath, stdhooks.RefundSettledCallbackHandler(stdhooks.WithIdempotentCallbacks(netHTTPPayments{p}, store), nil))
	srv := httptest.NewServer(m)
	defer srv.Close()

	var broken []string
	for _, r := range probeHooks(t, srv) {
		if r.Result == probe.Fail {
			broken = append(broken, r.Operation+": "+r.Check)
		}
	}
	got := strings.Join(broken, "; ")
	for _, want := range []string{"OrderPaid: missing key", "OrderPaid: replay", "OrderPaid: same key, another request", "OrderPaid: 8 concurrent, one key"} {
		if !strings.Contains(got, want) {
			t.Errorf("failed checks %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "RefundSettled") {
		t.Errorf("the wrapped callback failed: %s", got)
	}
}

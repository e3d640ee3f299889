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
// callbackPath, its deliveries signed as sign says, and returns the table.
func probeHooks(t *testing.T, srv *httptest.Server, sign probe.Signing) []probe.Row {
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
		Sign:       sign,
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

	rows := probeHooks(t, srv, probe.Signing{})
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
	for _, r := range probeHooks(t, srv, probe.Signing{}) {
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

// A receiver that checks Standard Webhooks signatures before the layer, as
// docs/webhooks.md has it, refuses the probe's unsigned deliveries: both
// events are listed as not probed, saying how to sign, and the receiver
// never runs. Signed with its secret, every check passes.
func TestProbeSignatureCheckingReceiver(t *testing.T) {
	store := redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
	p := &payments{}
	verify := verifyWebhooks(webhookSecret, 5*time.Minute)
	m := http.NewServeMux()
	m.Handle("POST "+hookPath, stdhooks.OrderPaidWebhookHandler(stdhooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil, verify))
	m.Handle("POST "+callbackPath, stdhooks.RefundSettledCallbackHandler(stdhooks.WithIdempotentCallbacks(netHTTPPayments{p}, store), nil, verify))
	srv := httptest.NewServer(m)
	defer srv.Close()

	for _, r := range probeHooks(t, srv, probe.Signing{}) {
		if r.Check != "not probed" || !strings.Contains(r.Got, "the receiver refused the delivery (401): sign it with -sign-secret") {
			t.Errorf("unsigned: %s: %s: %s, got %s; want not probed, refused", r.Operation, r.Check, r.Result, r.Got)
		}
	}
	if n := p.runs.Load(); n != 0 {
		t.Fatalf("unsigned deliveries ran the receiver %d times", n)
	}

	checked := map[string]int{}
	for _, r := range probeHooks(t, srv, probe.Signing{Secret: webhookSecret}) {
		checked[r.Operation]++
		if r.Result != probe.Pass {
			t.Errorf("signed: %s: %s: %s, got %s", r.Operation, r.Check, r.Result, r.Got)
		}
	}
	if checked["OrderPaid"] < 5 || checked["RefundSettled"] < 5 {
		t.Errorf("checks by operation: %v, want every check of the webhook and the callback", checked)
	}
}

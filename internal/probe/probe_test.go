package probe_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/probe"
)

// TestDryRunSendsNothing: a dry run lists the requests, says that a real
// run creates real resources, lists an operation without examples as not
// probed, and sends nothing.
func TestDryRunSendsNothing(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/openapi.yaml", "-url", srv.URL, "-header", "X-API-Key: sk_test", "-dry-run"}, &out, &errOut)
	if code != probe.ExitOK {
		t.Fatalf("exit %d, stderr %s", code, &errOut)
	}
	if hits.Load() != 0 {
		t.Errorf("a dry run sent %d requests", hits.Load())
	}
	for _, want := range []string{
		"nothing is sent", "creates real resources",
		"POST " + srv.URL + "/orders", `{"item":"apple"}`, "Idempotency-Key: idemctl-probe-", "X-Api-Key: sk_test",
		"refundOrder  not probed", "no example for path parameter orderId",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, &out)
		}
	}
}

// TestUnprotectedServerIsBroken: a server without the idempotency layer
// fails the probe, which names the checks and exits 1.
func TestUnprotectedServerIsBroken(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, n.Add(1))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/openapi.yaml", "-url", srv.URL, "-n", "4", "-yes"}, &out, &errOut)
	if code != probe.ExitBroken {
		t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, probe.ExitBroken, &out, &errOut)
	}
	for _, want := range []string{"sends REAL requests", "BROKEN:", "createOrder: missing key", "createOrder: replay",
		"createOrder: same key, another request", "createOrder: 4 concurrent, one key", "the operation ran 4 times"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
}

// TestExamplesFile: values from -examples make an operation probeable.
func TestExamplesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "examples.yaml")
	if err := os.WriteFile(file, []byte("refundOrder:\n  path: {orderId: ord-1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/openapi.yaml", "-url", "http://127.0.0.1:9", "-examples", file, "-op", "refundOrder", "-dry-run"}, &out, &errOut)
	if code != probe.ExitOK || !strings.Contains(out.String(), "POST http://127.0.0.1:9/orders/ord-1/refunds") || strings.Contains(out.String(), "createOrder") {
		t.Errorf("exit %d, output:\n%s%s", code, &out, &errOut)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-spec", "testdata/openapi.yaml"},
		{"-spec", "testdata/openapi.yaml", "-url", "ftp://x"},
		{"-spec", "testdata/openapi.yaml", "-url", "http://127.0.0.1:9", "-n", "1"},
		{"-spec", "testdata/openapi.yaml", "-url", "http://127.0.0.1:9", "-header", "nocolon"},
	} {
		var out, errOut bytes.Buffer
		if code := probe.Run(context.Background(), args, &out, &errOut); code != probe.ExitUsage || errOut.Len() == 0 {
			t.Errorf("%q: exit %d (stderr %q), want %d and a message", args, code, &errOut, probe.ExitUsage)
		}
	}
}

// TestMarkedByOverlay: the operations an overlay marks are probed, the
// overlay taken from the oapi-codegen config (relative to it) or -overlay.
func TestMarkedByOverlay(t *testing.T) {
	for _, args := range [][]string{
		{"-config", "testdata/cfg.yaml"},
		{"-overlay", "testdata/mark.overlay.yaml"},
	} {
		var out, errOut bytes.Buffer
		args = append(args, "-spec", "testdata/unmarked.yaml", "-url", "http://127.0.0.1:9", "-dry-run")
		if code := probe.Run(context.Background(), args, &out, &errOut); code != probe.ExitOK || !strings.Contains(out.String(), "createCharge: first request\n  POST http://127.0.0.1:9/charges") {
			t.Errorf("%q: exit %d, output:\n%s%s", args, code, &out, &errOut)
		}
	}
}

// TestEventsNotProbedWithoutURL: a marked webhook or callback whose URL
// the probe is not given gets a row saying it is not probed and how to
// probe it, not silence.
func TestEventsNotProbedWithoutURL(t *testing.T) {
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/webhooks.yaml", "-url", "http://127.0.0.1:9", "-dry-run"}, &out, &errOut)
	if code != probe.ExitOK {
		t.Fatalf("exit %d, stderr %s", code, &errOut)
	}
	for _, want := range []string{
		`OrderPaid +not probed +the webhook orderPaid is received at a URL of the receiver's, .*give -event orderPaid=URL, or -events-url`,
		`RefundSettled +not probed +the callback refundSettled is received at a URL`,
		`Notification +not probed +the webhook notification is received at a URL`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
}

// TestEventsAt: -event gives one webhook's URL, -events-url a base under
// which the others are received by their names; the key goes where each
// declares it (a composite key's first member).
func TestEventsAt(t *testing.T) {
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/webhooks.yaml", "-url", "http://127.0.0.1:9",
		"-event", "orderPaid=http://127.0.0.1:9/hooks/paid", "-events-url", "http://127.0.0.1:9/in", "-dry-run"}, &out, &errOut)
	if code != probe.ExitOK {
		t.Fatalf("exit %d, stderr %s", code, &errOut)
	}
	for _, want := range []string{
		"OrderPaid: first request\n  POST http://127.0.0.1:9/hooks/paid\n    Content-Type: application/json\n    Webhook-Id: idemctl-probe-",
		"RefundSettled: first request\n  POST http://127.0.0.1:9/in/refundSettled\n",
		"Notification: first request\n  POST http://127.0.0.1:9/in/notification\n    Content-Type: application/json\n    {\"event\":\"AUTHORISATION\",\"psp\":\"idemctl-probe-",
		"Notification: body key",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
	if strings.Contains(out.String(), "not probed") {
		t.Errorf("an event is not probed:\n%s", &out)
	}
}

// TestUnwrappedWebhookIsBroken: a webhook route mounted without the
// idempotency layer fails the probe, which sends its requests to the
// webhook's URL and names the checks it breaks.
func TestUnwrappedWebhookIsBroken(t *testing.T) {
	var hooks, elsewhere atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hooks/paid" {
			elsewhere.Add(1)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"seen":%d}`, hooks.Add(1))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/webhooks.yaml", "-url", srv.URL,
		"-event", "orderPaid=" + srv.URL + "/hooks/paid", "-op", "orderPaid", "-n", "4", "-yes"}, &out, &errOut)
	if code != probe.ExitBroken {
		t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, probe.ExitBroken, &out, &errOut)
	}
	for _, want := range []string{"BROKEN:", "OrderPaid: missing key", "OrderPaid: replay",
		"OrderPaid: same key, another request", "OrderPaid: 4 concurrent, one key", "the operation ran 4 times"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
	if hooks.Load() == 0 || elsewhere.Load() != 0 {
		t.Errorf("%d requests at the webhook's URL, %d elsewhere", hooks.Load(), elsewhere.Load())
	}
}

// TestEventUsage: a bad -event or -events-url, or one naming no marked
// webhook or callback, is refused with what is wrong.
func TestEventUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-event", "orderPaid"}, "want 'name=URL'"},
		{[]string{"-event", "orderPaid=ftp://x"}, `-event orderPaid "ftp://x": want an http or https URL`},
		{[]string{"-events-url", "nohost"}, `-events-url "nohost"`},
		{[]string{"-event", "orderPayed=http://127.0.0.1:9"}, "-event orderPayed: no x-idempotent webhook or callback of that name"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"-spec", "testdata/webhooks.yaml", "-url", "http://127.0.0.1:9", "-dry-run"}, c.args...)
		if code := probe.Run(context.Background(), args, &out, &errOut); code != probe.ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d (stderr %q), want %d and %q", c.args, code, &errOut, probe.ExitUsage, c.want)
		}
	}
}

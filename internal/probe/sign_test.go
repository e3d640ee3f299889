package probe_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/probe"
)

// TestNeedsYes: without -yes (or -dry-run) the probe says what it would
// run where, sends nothing, and exits 2.
func TestNeedsYes(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/openapi.yaml", "-url", srv.URL}, &out, &errOut)
	if code != probe.ExitUsage || hits.Load() != 0 {
		t.Fatalf("exit %d after %d requests, want %d and none", code, hits.Load(), probe.ExitUsage)
	}
	for _, want := range []string{"sends REAL requests", "It would run these operations there", "createOrder  POST " + srv.URL + "/orders"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
	if !strings.Contains(errOut.String(), "nothing was sent: pass -yes") {
		t.Errorf("stderr %q does not ask for -yes", &errOut)
	}
}

// verifier checks one signing scheme the way its receivers do, written
// from the scheme's documentation, independently of the probe's signer: a
// delivery it does not accept is answered 401 and never reaches next.
type verifier func(secret string, h http.Header, body []byte) bool

var verifiers = map[string]verifier{
	// Standard Webhooks: docs/webhooks.md's verifyWebhooks.
	probe.StandardWebhooks: func(secret string, h http.Header, body []byte) bool {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
		sec, perr := strconv.ParseInt(ts, 10, 64)
		if err != nil || perr != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
			return false
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(body)
		want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
		for _, sig := range strings.Fields(h.Get("webhook-signature")) {
			if hmac.Equal([]byte(sig), []byte(want)) {
				return true
			}
		}
		return false
	},
	// Stripe-Signature: t=<ts>,v1=<hex of HMAC-SHA256 over "ts.body">.
	probe.Stripe: func(secret string, h http.Header, body []byte) bool {
		var ts string
		var sigs []string
		for _, part := range strings.Split(h.Get("Stripe-Signature"), ",") {
			k, v, _ := strings.Cut(part, "=")
			switch k {
			case "t":
				ts = v
			case "v1":
				sigs = append(sigs, v)
			}
		}
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "."))
		m.Write(body)
		want := hex.EncodeToString(m.Sum(nil))
		for _, sig := range sigs {
			if hmac.Equal([]byte(sig), []byte(want)) && ts != "" {
				return true
			}
		}
		return false
	},
	// X-Hub-Signature-256: sha256=<hex of HMAC-SHA256 over the body>.
	probe.GitHub: func(secret string, h http.Header, body []byte) bool {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return hmac.Equal([]byte(h.Get("X-Hub-Signature-256")), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
	},
}

// signingReceiver is a webhook receiver that checks signatures with verify
// before it acts, and counts what it refused and what it acted on.
func signingReceiver(t *testing.T, secret string, verify verifier) (srv *httptest.Server, refused, ran *atomic.Int64) {
	refused, ran = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !verify(secret, r.Header, body) {
			refused.Add(1)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"seen":%d}`, ran.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, refused, ran
}

// TestUnsignedDeliveryRefused: a receiver that checks signatures refuses
// the probe's unsigned deliveries; the probe lists the webhook as not
// probed, says how to sign, and never reports what the refusals look like
// as runs or broken checks.
func TestUnsignedDeliveryRefused(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	srv, refused, ran := signingReceiver(t, secret, verifiers[probe.StandardWebhooks])
	var out, errOut bytes.Buffer
	code := probe.Run(context.Background(), []string{"-spec", "testdata/webhooks.yaml", "-url", srv.URL,
		"-event", "orderPaid=" + srv.URL + "/hooks/paid", "-op", "orderPaid", "-n", "4", "-yes"}, &out, &errOut)
	if code != probe.ExitOK {
		t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, probe.ExitOK, &out, &errOut)
	}
	want := `OrderPaid +not probed +the receiver refused the delivery \(401\): sign it with -sign-secret whsec_`
	if !regexp.MustCompile(want).MatchString(out.String()) {
		t.Errorf("output lacks %q:\n%s", want, &out)
	}
	for _, never := range []string{"run(s)", "ran", "FAIL", "first request", "every probed operation"} {
		if strings.Contains(out.String(), never) {
			t.Errorf("output says %q:\n%s", never, &out)
		}
	}
	if ran.Load() != 0 || refused.Load() == 0 {
		t.Errorf("the receiver acted on %d deliveries and refused %d; want none acted on", ran.Load(), refused.Load())
	}
}

// TestSignedDeliveries: with -sign-secret (and -sign), every delivery
// carries a signature the receiver's own check accepts, in each scheme
// docs/webhooks.md names, and the webhook is probed.
func TestSignedDeliveries(t *testing.T) {
	secrets := map[string]string{
		probe.StandardWebhooks: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		probe.Stripe:           "whsec_stripe_test_secret",
		probe.GitHub:           "a github webhook secret",
	}
	for scheme, verify := range verifiers {
		t.Run(scheme, func(t *testing.T) {
			srv, refused, ran := signingReceiver(t, secrets[scheme], verify)
			var out, errOut bytes.Buffer
			// notification's key is in the body: a Standard Webhooks
			// delivery of it still carries a webhook-id, signed.
			for _, op := range []string{"orderPaid", "notification"} {
				probe.Run(context.Background(), []string{"-spec", "testdata/webhooks.yaml", "-url", srv.URL,
					"-events-url", srv.URL + "/hooks", "-op", op, "-n", "4", "-yes",
					"-sign", scheme, "-sign-secret", secrets[scheme]}, &out, &errOut)
			}
			if refused.Load() != 0 || ran.Load() < 10 {
				t.Errorf("the receiver refused %d deliveries and acted on %d; want none refused:\n%s%s", refused.Load(), ran.Load(), &out, &errOut)
			}
			if strings.Contains(out.String(), "not probed") {
				t.Errorf("a webhook was not probed:\n%s", &out)
			}
		})
	}
}

// TestSignUsage: a signing scheme the probe does not know, a scheme
// without a secret and a Standard Webhooks secret that is not base64 are
// refused before anything is sent.
func TestSignUsage(t *testing.T) {
	t.Setenv("IDEMCTL_TEST_EMPTY", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-sign", "svix", "-sign-secret", "x"}, `-sign "svix": want one of standard-webhooks, stripe, github`},
		{[]string{"-sign", "stripe"}, "-sign stripe: give the secret too, with -sign-secret"},
		{[]string{"-sign-secret", "whsec_not base64!"}, "-sign-secret: a Standard Webhooks secret is whsec_ and the key in base64"},
		{[]string{"-sign-secret", "env:IDEMCTL_TEST_EMPTY"}, "$IDEMCTL_TEST_EMPTY is empty or not set"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"-spec", "testdata/webhooks.yaml", "-url", "http://127.0.0.1:9", "-dry-run"}, c.args...)
		if code := probe.Run(context.Background(), args, &out, &errOut); code != probe.ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d (stderr %q), want %d and %q", c.args, code, &errOut, probe.ExitUsage, c.want)
		}
	}
}

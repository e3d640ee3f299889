package e2e_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/e2e/hooks/stdhooks"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// Standard Webhooks signatures (https://www.standardwebhooks.com), by hand:
// the sender signs "id.timestamp.body" with HMAC-SHA256 under the shared
// secret and sends webhook-id, webhook-timestamp and webhook-signature
// ("v1,<base64>", several separated by spaces while a secret rotates).
// docs/webhooks.md shows the same code.

// webhookSecret is the shared secret, as a provider shows it: whsec_ and
// the key in base64.
const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// webhookKey is the HMAC key of a whsec_ secret.
func webhookKey(secret string) []byte {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	return key
}

// webhookSignature is the v1 signature of one delivery.
func webhookSignature(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// verifyWebhooks is the receiver's signature check, a middleware for the
// generated handler function: a delivery whose signature does not match,
// or whose timestamp is more than tolerance away, is answered 401 and
// never reaches the idempotency layer, so a forged delivery cannot occupy
// a real event's id. It reads the body and puts it back for the layer.
func verifyWebhooks(secret string, tolerance time.Duration) func(http.Handler) http.Handler {
	key := webhookKey(secret)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
			if err != nil {
				http.Error(w, "unreadable body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
			sec, err := strconv.ParseInt(ts, 10, 64)
			if err != nil || time.Since(time.Unix(sec, 0)).Abs() > tolerance {
				http.Error(w, "stale or missing webhook-timestamp", http.StatusUnauthorized)
				return
			}
			want := webhookSignature(key, id, ts, body)
			for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
				if hmac.Equal([]byte(sig), []byte(want)) {
					next.ServeHTTP(w, r)
					return
				}
			}
			http.Error(w, "bad webhook-signature", http.StatusUnauthorized)
		})
	}
}

// signedDelivery builds a delivery signed under secret.
func signedDelivery(secret, id, body string) *http.Request {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r, _ := http.NewRequest(http.MethodPost, hookPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", ts)
	r.Header.Set("webhook-signature", webhookSignature(webhookKey(secret), id, ts, []byte(body)))
	return r
}

// serve answers r through h.
func serve(t *testing.T, h http.Handler, r *http.Request) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

// A forged delivery carrying a real event's id is refused by the
// signature check, which runs before the idempotency layer: it neither
// runs the receiver nor occupies the id, so the real delivery runs, and
// the forgery is refused again afterwards rather than answered with the
// real event's stored answer. On real Redis.
func TestForgedDeliveryNeitherRunsNorBlocks(t *testing.T) {
	store := redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
	p := &payments{}
	h := stdhooks.OrderPaidWebhookHandler(stdhooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil,
		verifyWebhooks(webhookSecret, 5*time.Minute))
	const forger = "whsec_c2VjcmV0IG9mIHNvbWVvbmUgZWxzZQ=="

	wantStatus(t, serve(t, h, signedDelivery(forger, "msg_1", paid2)), http.StatusUnauthorized)
	wantCount(t, "the receiver", p.runs.Load(), 0)

	genuine := serve(t, h, signedDelivery(webhookSecret, "msg_1", paid1))
	wantStatus(t, genuine, http.StatusOK)
	if genuine.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the real delivery was answered from a record the forgery left")
	}
	wantCount(t, "the receiver", p.runs.Load(), 1)

	again := serve(t, h, signedDelivery(forger, "msg_1", paid1))
	wantStatus(t, again, http.StatusUnauthorized)
	if strings.Contains(again.body, "run") {
		t.Errorf("the forgery got the real event's answer: %s", again.body)
	}
	wantStatus(t, serve(t, h, signedDelivery(webhookSecret, "msg_1", paid1)), http.StatusOK)
	wantCount(t, "the receiver", p.runs.Load(), 1)
}

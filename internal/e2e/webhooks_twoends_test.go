package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/e2e/hooks/stdhooks"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// droppingProxy is a proxy on loopback in front of the server at target
// that forwards every request and drops the first answer: the receiver
// answers it, the proxy closes the sender's connection without a word, as
// a timeout or a reset between them would (dropFirstAnswer, in-process,
// does the same to the operations).
type droppingProxy struct {
	target  string
	dropped atomic.Bool
}

func (d *droppingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, d.target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	out.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if d.dropped.CompareAndSwap(false, true) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
		return
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(answer)
}

// The generated initiator delivers to the generated receiver through a
// proxy that drops the first answer: the sender retries with the same id
// and bytes, the receiver runs once and answers the retry from its record,
// and the sender gets success. Signed as Standard Webhooks are, each
// attempt with a fresh timestamp; on real Redis.
func TestWebhookTwoEnds(t *testing.T) {
	store := redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
	p := &payments{}
	receiver := httptest.NewServer(stdhooks.OrderPaidWebhookHandler(stdhooks.WithIdempotentWebhooks(netHTTPPayments{p}, store), nil,
		verifyWebhooks(webhookSecret, 5*time.Minute)))
	defer receiver.Close()
	proxy := httptest.NewServer(&droppingProxy{target: receiver.URL})
	defer proxy.Close()

	const eventID = "msg_2fGjMzMQ8b1p" // the sender's own event id: one id per event
	sign := func(_ context.Context, req *http.Request) error {
		body, err := req.GetBody()
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(body)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", webhookSignature(webhookKey(webhookSecret), eventID, ts, b))
		return nil
	}
	in, err := stdhooks.NewWebhookInitiator()
	if err != nil {
		t.Fatal(err)
	}
	var attempts []idem.AttemptInfo
	sender := stdhooks.NewIdempotentWebhookInitiator(in, idem.WithAttemptHook(func(a idem.AttemptInfo) { attempts = append(attempts, a) }))
	var result idem.CallResult
	res, err := sender.OrderPaid(context.Background(), proxy.URL+hookPath,
		stdhooks.OrderPaidEvent{Type: "order.paid", Order: "o_1", Amount: 1200},
		idem.WithKey(eventID), idem.WithRequestEditors(sign), idem.WithResult(&result))
	if err != nil {
		t.Fatalf("delivery failed: %v (attempts %+v)", err, attempts)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get(idemop.HeaderReplayed) != "true" {
		t.Errorf("the sender got %d (replayed %q), want 200 answered from the receiver's record", res.StatusCode, res.Header.Get(idemop.HeaderReplayed))
	}
	wantCount(t, "the receiver", p.runs.Load(), 1)
	if result.Key != eventID || result.Attempts != 2 || !result.Replayed {
		t.Errorf("result = %+v, want key %s, 2 attempts, the last replayed", result, eventID)
	}
	if len(attempts) != 2 || attempts[0].Err == nil || !attempts[0].Retry || attempts[1].Status != http.StatusOK || attempts[1].Key != eventID {
		t.Errorf("attempts = %+v, want a dropped first attempt retried, then 200 under the same id", attempts)
	}
}

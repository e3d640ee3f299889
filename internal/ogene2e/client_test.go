package ogene2e_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/ogene2e/api"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// sent is what one attempt carried to the server.
type sent struct {
	key  string
	body []byte
}

// lossy is an http.Handler in front of the server: it records every
// attempt, and for the first drop attempts it runs the server, throws its
// answer away and closes the connection, as a server that crashed after the
// handler's commit would be seen.
type lossy struct {
	next http.Handler
	drop int64

	n    atomic.Int64
	mu   sync.Mutex
	sent []sent
}

func (l *lossy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.sent = append(l.sent, sent{key: r.Header.Get("Idempotency-Key"), body: body})
	l.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if l.n.Add(1) > l.drop {
		l.next.ServeHTTP(w, r)
		return
	}
	l.next.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// fastCaller retries at once, so that the tests wait on no backoff.
func fastCaller() *idem.Caller {
	return idem.NewCaller(idem.WithPolicy(func(_ string, p idemop.RetryPolicy) idemop.RetryPolicy {
		p.InitialInterval, p.MaxInterval = time.Millisecond, time.Millisecond
		return p
	}))
}

// client returns ogen's idempotent Client of h served on store, behind a
// lossy front that drops the first drop answers.
func client(t *testing.T, h api.Handler, store idemstore.Store, drop int64) (*api.Client, *lossy) {
	t.Helper()
	return clientUnder(t, "", h, store, drop)
}

// clientUnder is client for a server whose paths follow prefix.
func clientUnder(t *testing.T, prefix string, h api.Handler, store idemstore.Store, drop int64) (*api.Client, *lossy) {
	t.Helper()
	srv, err := api.NewServer(h, api.WithPathPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	front := &lossy{next: api.WithIdempotency(srv, store), drop: drop}
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	c, err := api.NewIdempotentClient(ts.URL+prefix, fastCaller(), api.WithClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c, front
}

// sameAttempts checks that every attempt carried the first one's key and
// body, and that the key is not empty.
func sameAttempts(t *testing.T, attempts []sent, want int) {
	t.Helper()
	if len(attempts) != want {
		t.Fatalf("%d attempts, want %d", len(attempts), want)
	}
	for i, a := range attempts {
		if a.key != attempts[0].key || !bytes.Equal(a.body, attempts[0].body) {
			t.Errorf("attempt %d sent key %q and %q, the first %q and %q", i+1, a.key, a.body, attempts[0].key, attempts[0].body)
		}
	}
}

func TestClientRetriesALostAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		c, front := client(t, h, store, 2)
		order, err := c.CreateOrder(context.Background(), &api.NewOrder{Item: "book"}, api.CreateOrderParams{})
		if err != nil {
			t.Fatal(err)
		}
		if order.Run != 1 || order.Item != "book" {
			t.Errorf("order %+v, want the first run's", order)
		}
		if got := h.runs.Load(); got != 1 {
			t.Errorf("%d runs of the handler, want 1", got)
		}
		sameAttempts(t, front.sent, 3)
		if front.sent[0].key == "" {
			t.Errorf("the client sent no key")
		}
	})
}

func TestClientUnderAPathPrefix(t *testing.T) {
	h := &shop{}
	c, front := clientUnder(t, "/v1", h, memstore.New(), 1)
	if _, err := c.ShipOrder(context.Background(), api.ShipOrderParams{OrderId: "o/1"}); err != nil {
		t.Fatal(err)
	}
	sameAttempts(t, front.sent, 2)
	if got := h.runs.Load(); got != 1 || front.sent[0].key == "" {
		t.Errorf("%d runs of the handler after attempts with key %q, want 1 and a key", got, front.sent[0].key)
	}
}

func TestClientSendsTheCallersKey(t *testing.T) {
	h := &shop{}
	c, front := client(t, h, memstore.New(), 1)
	if _, err := c.CreateOrder(context.Background(), &api.NewOrder{Item: "book"}, api.CreateOrderParams{IdempotencyKey: "mine-1"}); err != nil {
		t.Fatal(err)
	}
	sameAttempts(t, front.sent, 2)
	if front.sent[0].key != "mine-1" || len(h.keys) != 1 || h.keys[0] != "mine-1" {
		t.Errorf("keys sent %q, seen by the handler %q; want mine-1", front.sent[0].key, h.keys)
	}
}

func TestClientFillsTheBodyKey(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		c, front := client(t, h, store, 1)
		pay, err := c.CreatePayment(context.Background(), &api.NewPayment{Amount: 7})
		if err != nil {
			t.Fatal(err)
		}
		if pay.Amount != 7 || h.runs.Load() != 1 {
			t.Errorf("payment %+v after %d runs, want amount 7 after 1", pay, h.runs.Load())
		}
		sameAttempts(t, front.sent, 2)
		if len(h.keys) != 1 || h.keys[0] == "" || !bytes.Contains(front.sent[0].body, []byte(`"idempotency_key":"`+h.keys[0]+`"`)) {
			t.Errorf("body %s, key seen by the handler %q: want the client's key in the body", front.sent[0].body, h.keys)
		}
	})
}

func TestClientProblemAnswer(t *testing.T) {
	h := &shop{}
	c, _ := client(t, h, memstore.New(), 0)
	ctx := context.Background()
	if _, err := c.CreateOrder(ctx, &api.NewOrder{Item: "book"}, api.CreateOrderParams{IdempotencyKey: "used-1"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateOrder(ctx, &api.NewOrder{Item: "lamp"}, api.CreateOrderParams{IdempotencyKey: "used-1"})
	var prob *idem.ProblemError
	if !errors.As(err, &prob) || prob.Problem.Code != idemop.CodeFingerprintMismatch {
		t.Errorf("a key reused for another order: %v, want an *idem.ProblemError fingerprint-mismatch", err)
	}
}

func TestClientLeavesOtherOperations(t *testing.T) {
	h := &shop{}
	c, front := client(t, h, memstore.New(), 0)
	if _, err := c.ListOrders(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(front.sent) != 1 || front.sent[0].key != "" {
		t.Errorf("listOrders sent %+v, want one attempt without a key", front.sent)
	}
}

// upstream is an ogen Handler whose createOrder pays through a downstream
// ogen client, and fails its first run after the payment.
type upstream struct {
	api.UnimplementedHandler
	pay  *api.Client
	runs atomic.Int64
}

func (u *upstream) CreateOrder(ctx context.Context, req *api.NewOrder, _ api.CreateOrderParams) (*api.Order, error) {
	n := u.runs.Add(1)
	if _, err := u.pay.CreatePayment(ctx, &api.NewPayment{Amount: 5}); err != nil {
		return nil, err
	}
	if n == 1 {
		return nil, errors.New("failed after paying") // 500: not stored, the retry runs again
	}
	return &api.Order{ID: "order-1", Item: req.Item, Run: int(n)}, nil
}

func TestClientDerivesKeysInsideARun(t *testing.T) {
	down := &shop{}
	pay, front := client(t, down, memstore.New(), 0)
	up := &upstream{pay: pay}
	ts := serve(t, up, memstore.New())
	first := post(t, ts, "/orders", "outer-1", `{"item":"book"}`)
	again := post(t, ts, "/orders", "outer-1", `{"item":"book"}`)
	if first.status != http.StatusInternalServerError || again.status != http.StatusCreated {
		t.Fatalf("the order: %d then %d, want 500 then 201", first.status, again.status)
	}
	sameAttempts(t, front.sent, 2)
	if up.runs.Load() != 2 || down.runs.Load() != 1 {
		t.Errorf("%d runs upstream and %d downstream, want 2 and 1: the re-run's payment carries the first's key", up.runs.Load(), down.runs.Load())
	}
}

func TestClientGivesUpOnAStoreDown(t *testing.T) {
	h := &shop{}
	srv, err := api.NewServer(h)
	if err != nil {
		t.Fatal(err)
	}
	front := &lossy{next: api.WithIdempotency(srv, downStore(t))}
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	caller := idem.NewCaller(idem.WithPolicy(func(_ string, p idemop.RetryPolicy) idemop.RetryPolicy {
		p.MaxAttempts, p.InitialInterval, p.MaxInterval = 2, time.Millisecond, time.Millisecond
		return p
	}))
	c, err := api.NewIdempotentClient(ts.URL, caller, api.WithClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateOrder(context.Background(), &api.NewOrder{Item: "book"}, api.CreateOrderParams{})
	var gaveUp *idem.RetryError
	if !errors.As(err, &gaveUp) || gaveUp.LastStatus != http.StatusServiceUnavailable || gaveUp.Attempts != 2 {
		t.Errorf("the call: %v, want an *idem.RetryError after 2 attempts answered 503", err)
	}
	sameAttempts(t, front.sent, 2)
	if got := h.runs.Load(); got != 0 {
		t.Errorf("%d runs of the handler, want 0", got)
	}
}

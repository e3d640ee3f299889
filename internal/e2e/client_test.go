package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/internal/e2e/clientapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestClient drives the generated client helpers against the generated
// strict server over real HTTP.
func TestClient(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, srv := range servers() {
				t.Run(srv.name, func(t *testing.T) {
					testClient(t, srv, b)
				})
			}
		})
	}
}

func testClient(t *testing.T, srv server, b backend) {
	setup := func(t *testing.T) (*shop, *clientapi.IdempotentClient) {
		s := &shop{}
		ts := httptest.NewServer(srv.handler(s, b.store(t)))
		t.Cleanup(ts.Close)
		return s, newClient(t, ts.URL, "key-of-tenant-a")
	}
	ctx := context.Background()
	newOrder := clientapi.CreateOrderJSONRequestBody{Item: "pear", Quantity: 1}

	t.Run("one key per call, replay on reuse", func(t *testing.T) {
		s, c := setup(t)
		var first idem.CallResult
		resp, err := c.CreateOrder(ctx, nil, newOrder, idem.WithResult(&first))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusCreated || resp.JSON201 == nil {
			t.Fatalf("status %d, body %s", resp.StatusCode(), resp.Body)
		}
		if first.Key == "" || first.Replayed || first.Attempts != 1 {
			t.Errorf("first call result %+v", first)
		}
		var again idem.CallResult
		resp2, err := c.CreateOrder(ctx, nil, newOrder, idem.WithKey(first.Key), idem.WithResult(&again))
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || resp2.JSON201 == nil || resp2.JSON201.Id != resp.JSON201.Id {
			t.Errorf("second call %+v, order %v; want the replay of %v", again, resp2.JSON201, resp.JSON201)
		}
		wantCount(t, "createOrder", s.created.Load(), 1)
	})

	t.Run("retries 503 with the same key", func(t *testing.T) {
		s, c := setup(t)
		s.failFirst.Store(2)
		var res idem.CallResult
		resp, err := c.CreateOrder(ctx, &clientapi.CreateOrderParams{}, newOrder, idem.WithResult(&res))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusCreated || res.Attempts != 3 {
			t.Errorf("status %d after %d attempts, want 201 after 3", resp.StatusCode(), res.Attempts)
		}
		wantCount(t, "createOrder (calls)", s.createCalls.Load(), 3)
		wantCount(t, "createOrder", s.created.Load(), 1)
	})

	t.Run("gives up with a RetryError carrying the key", func(t *testing.T) {
		s, c := setup(t)
		s.failFirst.Store(100)
		var res idem.CallResult
		resp, err := c.CreateOrder(ctx, nil, newOrder, idem.WithResult(&res))
		var re *idem.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("err = %v, want a *idem.RetryError", err)
		}
		if re.Key != res.Key || re.LastStatus != http.StatusServiceUnavailable || re.Attempts != 4 {
			t.Errorf("RetryError %+v, want key %q, last status 503, 4 attempts (the spec's maxAttempts)", re, res.Key)
		}
		if resp == nil || resp.StatusCode() != http.StatusServiceUnavailable {
			t.Errorf("last typed response %v, want the 503", resp)
		}
	})

	t.Run("per-call request editors run on every attempt", func(t *testing.T) {
		s, c := setup(t)
		s.failFirst.Store(2)
		edits := 0
		asTenantB := clientapi.RequestEditorFn(func(_ context.Context, r *http.Request) error {
			edits++
			r.Header.Set("X-API-Key", "key-of-tenant-b") // after the client-wide editor
			return nil
		})
		var res idem.CallResult
		resp, err := c.CreateOrder(ctx, nil, newOrder, idem.WithKey("order-b"), idem.WithRequestEditors(asTenantB), idem.WithResult(&res))
		if err != nil || resp.StatusCode() != http.StatusCreated {
			t.Fatalf("call as tenant B: %v, %v", err, resp)
		}
		if edits != 3 || res.Attempts != 3 {
			t.Errorf("editor ran %d times in %d attempts, want once per attempt (3)", edits, res.Attempts)
		}
		// Tenant A (the client-wide header) has its own key space: the
		// same key runs again there, so the editor's header was sent.
		again, err := c.CreateOrder(ctx, nil, newOrder, idem.WithKey("order-b"), idem.WithResult(&res))
		if err != nil || again.StatusCode() != http.StatusCreated || res.Replayed {
			t.Fatalf("same key as tenant A: %v, status %v, replayed %v; want a run of its own", err, again, res.Replayed)
		}
		wantCount(t, "createOrder", s.created.Load(), 2)

		refused := errors.New("no trace id")
		_, err = c.CreateOrder(ctx, nil, newOrder, idem.WithRequestEditors(func(context.Context, *http.Request) error { return refused }))
		if !errors.Is(err, refused) {
			t.Errorf("editor error: err = %v, want it wrapped", err)
		}
		wantCount(t, "createOrder (after the editor's error)", s.created.Load(), 2)
	})

	t.Run("a problem answer is a ProblemError", func(t *testing.T) {
		s, c := setup(t)
		if _, err := c.CreateOrder(ctx, nil, newOrder, idem.WithKey("reused")); err != nil {
			t.Fatal(err)
		}
		other := clientapi.CreateOrderJSONRequestBody{Item: "plum", Quantity: 2}
		resp, err := c.CreateOrder(ctx, nil, other, idem.WithKey("reused"))
		var pe *idem.ProblemError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want a *idem.ProblemError", err)
		}
		if pe.Problem.Code != idemop.CodeFingerprintMismatch || pe.Problem.Status != http.StatusUnprocessableEntity || pe.Problem.Detail == "" || pe.Key != "reused" || pe.Op != "CreateOrder" {
			t.Errorf("ProblemError %+v, want code %s, status 422, a detail, key and operation", pe, idemop.CodeFingerprintMismatch)
		}
		var p *idem.Problem
		if !errors.As(err, &p) || p.Code != idemop.CodeFingerprintMismatch {
			t.Errorf("errors.As *idem.Problem: %v", p)
		}
		if resp == nil || resp.StatusCode() != http.StatusUnprocessableEntity {
			t.Errorf("typed response %v, want the 422 beside the error", resp)
		}
		wantCount(t, "createOrder", s.created.Load(), 1)
	})

	t.Run("fills the declared key parameter", func(t *testing.T) {
		s, c := setup(t)
		resp, err := c.ShipOrder(ctx, "ord-1")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusAccepted {
			t.Fatalf("status %d, body %s", resp.StatusCode(), resp.Body)
		}
		wantCount(t, "shipOrder", s.shipped.Load(), 1)
	})

	t.Run("body key: filled when empty, adopted when set", func(t *testing.T) {
		s, c := setup(t)
		var res idem.CallResult
		resp, err := c.CreatePayment(ctx, clientapi.CreatePaymentJSONRequestBody{Amount: 7}, idem.WithResult(&res))
		if err != nil || resp.StatusCode() != http.StatusCreated {
			t.Fatalf("first payment: %v %v", err, resp)
		}
		if res.Key == "" {
			t.Error("no key filled into the body")
		}
		key := res.Key
		var again idem.CallResult
		resp2, err := c.CreatePayment(ctx, clientapi.CreatePaymentJSONRequestBody{Amount: 7, IdempotencyKey: &key}, idem.WithResult(&again))
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || again.Key != key || resp2.JSON201 == nil || resp2.JSON201.Id != resp.JSON201.Id {
			t.Errorf("second payment %+v %v, want the replay under key %q", again, resp2.JSON201, key)
		}
		wantCount(t, "createPayment", s.paid.Load(), 1)
	})
}

// newClient is the generated client of the server at url, sending apiKey
// in X-API-Key on every request, as a real API's client does.
func newClient(t *testing.T, url, apiKey string) *clientapi.IdempotentClient {
	t.Helper()
	c, err := clientapi.NewClientWithResponses(url, clientapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-API-Key", apiKey)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return clientapi.NewIdempotentClient(c)
}

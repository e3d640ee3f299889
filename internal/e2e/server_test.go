package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
)

// answer is what a test sees of a response.
type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, path, body string, header ...string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

// problemCode returns the code member of an application/problem+json answer.
func problemCode(t *testing.T, a answer) string {
	t.Helper()
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type = %q, want application/problem+json (status %d, body %s)", ct, a.status, a.body)
	}
	var p struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal([]byte(a.body), &p); err != nil {
		t.Fatalf("problem body %q: %v", a.body, err)
	}
	if p.Status != a.status {
		t.Errorf("problem status %d, HTTP status %d", p.Status, a.status)
	}
	return p.Code
}

func wantStatus(t *testing.T, a answer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status = %d, want %d; body %s", a.status, status, a.body)
	}
}

func wantCount(t *testing.T, what string, got int64, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s ran %d times, want %d", what, got, want)
	}
}

const (
	order1 = `{"item":"apple","quantity":2}`
	order2 = `{"item":"apple","quantity":3}`
)

// TestServer is the behaviour every generated server promises, one table
// of scenarios run against each of the eighteen server forms (servers:
// chi, std-http, gorilla, echo v4 and v5, gin, iris, fiber v2 and v3, each
// strict and plain), over miniredis, real Redis, PostgreSQL and MariaDB
// (where createOrder's order commits with its result, through pgstore.Tx
// or mysqlstore.Tx).
func TestServer(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, h http.Handler, s *shop)
	}{
		{"duplicate runs once and replays identically", func(t *testing.T, h http.Handler, s *shop) {
			first := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1")
			wantStatus(t, first, http.StatusCreated)
			if first.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("first answer marked replayed")
			}
			for range 3 {
				again := do(t, h, "POST", "/orders", "{ \"quantity\": 2, \"item\": \"apple\" }", "Idempotency-Key", "k1")
				wantStatus(t, again, http.StatusCreated)
				if again.body != first.body {
					t.Errorf("replayed body %q, want %q", again.body, first.body)
				}
				for _, name := range []string{"Location", "Content-Type"} {
					if got, want := again.header.Get(name), first.header.Get(name); got != want {
						t.Errorf("replayed %s = %q, want %q", name, got, want)
					}
				}
				if again.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("Idempotent-Replayed = %q, want true", again.header.Get("Idempotent-Replayed"))
				}
			}
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"the handler reads its key and fence from its context", func(t *testing.T, h http.Handler, s *shop) {
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusCreated)
			info, _ := s.seen.Load().(idem.Info)
			if info.Key != "k1" || info.Operation != "CreateOrder" || info.Fence < 1 {
				t.Errorf("idem.FromContext in the handler = %+v, want key k1, operation CreateOrder, a fence (1 on a plain store, a claim's on pgstore)", info)
			}
		}},
		{"another key runs again", func(t *testing.T, h http.Handler, s *shop) {
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusCreated)
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k2"), http.StatusCreated)
			wantCount(t, "createOrder", s.created.Load(), 2)
		}},
		{"same key with another body is 422", func(t *testing.T, h http.Handler, s *shop) {
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusCreated)
			a := do(t, h, "POST", "/orders", order2, "Idempotency-Key", "k1")
			wantStatus(t, a, http.StatusUnprocessableEntity)
			if code := problemCode(t, a); code != "fingerprint-mismatch" {
				t.Errorf("code = %q, want fingerprint-mismatch", code)
			}
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"a fingerprint header is part of the request", func(t *testing.T, h http.Handler, s *shop) {
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1", "X-Account-Id", "acct-1"), http.StatusCreated)
			a := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1", "X-Account-Id", "acct-2")
			wantStatus(t, a, http.StatusUnprocessableEntity)
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"missing key is 400 missing-key", func(t *testing.T, h http.Handler, s *shop) {
			a := do(t, h, "POST", "/orders", order1)
			wantStatus(t, a, http.StatusBadRequest)
			if code := problemCode(t, a); code != "missing-key" {
				t.Errorf("code = %q, want missing-key", code)
			}
			wantCount(t, "createOrder", s.createCalls.Load(), 0)
		}},
		{"overlong key is 400 invalid-key", func(t *testing.T, h http.Handler, s *shop) {
			a := do(t, h, "POST", "/orders", order1, "Idempotency-Key", strings.Repeat("k", 256))
			wantStatus(t, a, http.StatusBadRequest)
			if code := problemCode(t, a); code != "invalid-key" {
				t.Errorf("code = %q, want invalid-key", code)
			}
			wantCount(t, "createOrder", s.createCalls.Load(), 0)
		}},
		{"a required key parameter is checked by oapi-codegen first, answered as a problem", func(t *testing.T, h http.Handler, s *shop) {
			// shipOrder declares Idempotency-Key as a required header
			// parameter: oapi-codegen's wrapper answers 400 before the
			// idempotency layer runs, through IdempotencyErrorHandler, which
			// says what the layer would.
			a := do(t, h, "POST", "/orders/ord-9/ship", "")
			wantStatus(t, a, http.StatusBadRequest)
			if s.routerProblems {
				if code := problemCode(t, a); code != "missing-key" {
					t.Errorf("code = %q, want missing-key", code)
				}
			}
			wantCount(t, "shipOrder", s.shipped.Load(), 0)
			first := do(t, h, "POST", "/orders/ord-9/ship", "", "Idempotency-Key", "s1")
			wantStatus(t, first, http.StatusAccepted)
			again := do(t, h, "POST", "/orders/ord-9/ship", "", "Idempotency-Key", "s1")
			if again.status != http.StatusAccepted || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("second ship = %d %q (replayed %q), want the replay of %q", again.status, again.body, again.header.Get("Idempotent-Replayed"), first.body)
			}
			wantCount(t, "shipOrder", s.shipped.Load(), 1)
		}},
		{"a duplicate while the original runs is 409", func(t *testing.T, h http.Handler, s *shop) {
			s.entered, s.gate = make(chan struct{}), make(chan struct{})
			done := make(chan answer, 1)
			go func() { done <- do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1") }()
			<-s.entered
			s.entered = nil // the original is inside; later requests do not wait
			a := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1")
			wantStatus(t, a, http.StatusConflict)
			if code := problemCode(t, a); code != "conflict" {
				t.Errorf("code = %q, want conflict", code)
			}
			if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After = %q, want whole seconds >= 1", a.header.Get("Retry-After"))
			}
			close(s.gate)
			wantStatus(t, <-done, http.StatusCreated)
			replay := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1")
			wantStatus(t, replay, http.StatusCreated)
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"a burst of duplicates runs once", func(t *testing.T, h http.Handler, s *shop) {
			const n = 8
			var wg sync.WaitGroup
			answers := make([]answer, n)
			for i := range n {
				wg.Go(func() { answers[i] = do(t, h, "POST", "/orders", order1, "Idempotency-Key", "burst") })
			}
			wg.Wait()
			for _, a := range answers {
				if a.status != http.StatusCreated && a.status != http.StatusConflict {
					t.Errorf("status %d, want 201 or 409; body %s", a.status, a.body)
				}
			}
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"a 5xx is not stored: the retry runs again", func(t *testing.T, h http.Handler, s *shop) {
			s.failFirst.Store(1)
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusServiceUnavailable)
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusCreated)
			wantCount(t, "createOrder (calls)", s.createCalls.Load(), 2)
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"a body key replays and ignores listed members", func(t *testing.T, h http.Handler, s *shop) {
			first := do(t, h, "POST", "/payments", `{"idempotency_key":"pay-key","amount":5,"trace_id":"a"}`)
			wantStatus(t, first, http.StatusCreated)
			again := do(t, h, "POST", "/payments", `{"trace_id":"b","amount":5,"idempotency_key":"pay-key"}`)
			wantStatus(t, again, http.StatusCreated)
			if again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("second payment %q (replayed %q), want the replay of %q", again.body, again.header.Get("Idempotent-Replayed"), first.body)
			}
			wantStatus(t, do(t, h, "POST", "/payments", `{"idempotency_key":"pay-key","amount":6}`), http.StatusUnprocessableEntity)
			wantCount(t, "createPayment", s.paid.Load(), 1)
		}},
		{"a body over the limit is 413 and the handler does not run", func(t *testing.T, h http.Handler, s *shop) {
			big := `{"item":"` + strings.Repeat("a", 1<<20) + `","quantity":1}`
			a := do(t, h, "POST", "/orders", big, "Idempotency-Key", "k1")
			wantStatus(t, a, http.StatusRequestEntityTooLarge)
			if code := problemCode(t, a); code != "payload-too-large" {
				t.Errorf("code = %q, want payload-too-large", code)
			}
			wantCount(t, "createOrder (calls)", s.createCalls.Load(), 0)
		}},
		{"an undecodable body over the limit is 413, before any decoding", func(t *testing.T, h http.Handler, s *shop) {
			a := do(t, h, "POST", "/orders", `{"item":`+strings.Repeat(" ", 1<<20)+`!`, "Idempotency-Key", "k1")
			wantStatus(t, a, http.StatusRequestEntityTooLarge)
			if code := problemCode(t, a); code != "payload-too-large" {
				t.Errorf("code = %q, want payload-too-large", code)
			}
			wantCount(t, "createOrder (calls)", s.createCalls.Load(), 0)
		}},
		{"a panic releases the key: the retry runs again", func(t *testing.T, h http.Handler, s *shop) {
			s.panicFirst.Store(1)
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusInternalServerError)
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusCreated)
			wantCount(t, "createOrder (calls)", s.createCalls.Load(), 2)
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"Set-Cookie reaches the first client and is never replayed", func(t *testing.T, h http.Handler, s *shop) {
			first := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1")
			wantStatus(t, first, http.StatusCreated)
			if first.header.Get("Set-Cookie") == "" {
				t.Fatal("the first answer has no Set-Cookie")
			}
			again := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1")
			wantStatus(t, again, http.StatusCreated)
			if again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Location") == "" {
				t.Errorf("second answer replayed %q, Location %q: want a replay with Location", again.header.Get("Idempotent-Replayed"), again.header.Get("Location"))
			}
			if c := again.header.Values("Set-Cookie"); len(c) > 0 {
				t.Errorf("the replay carries Set-Cookie %q", c)
			}
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"a store outage is 503 store-unavailable and runs nothing", func(t *testing.T, h http.Handler, s *shop) {
			s.store.fail.Store(true)
			a := do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1")
			wantStatus(t, a, http.StatusServiceUnavailable)
			if code := problemCode(t, a); code != "store-unavailable" {
				t.Errorf("code = %q, want store-unavailable", code)
			}
			if ra := a.header.Get("Retry-After"); ra != "1" {
				t.Errorf("Retry-After = %q, want 1", ra)
			}
			wantCount(t, "createOrder (calls)", s.createCalls.Load(), 0)
			wantStatus(t, do(t, h, "POST", "/orders", order1, "Idempotency-Key", "k1"), http.StatusCreated)
			wantCount(t, "createOrder", s.created.Load(), 1)
		}},
		{"a policy that stores 500 replays it", func(t *testing.T, h http.Handler, s *shop) {
			const failed = `{"idempotency_key":"pay-500","amount":500}`
			first := do(t, h, "POST", "/payments", failed)
			wantStatus(t, first, http.StatusInternalServerError)
			again := do(t, h, "POST", "/payments", failed)
			wantStatus(t, again, http.StatusInternalServerError)
			if again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("second answer %q (Idempotent-Replayed %q), want the replay of %q", again.body, again.header.Get("Idempotent-Replayed"), first.body)
			}
			wantCount(t, "createPayment", s.charges.Load(), 1)
		}},
		{"a policy that keeps 402 out releases it", func(t *testing.T, h http.Handler, s *shop) {
			const declined = `{"idempotency_key":"pay-402","amount":402}`
			first := do(t, h, "POST", "/payments", declined)
			wantStatus(t, first, http.StatusPaymentRequired)
			again := do(t, h, "POST", "/payments", declined)
			wantStatus(t, again, http.StatusPaymentRequired)
			if again.header.Get("Idempotent-Replayed") != "" || again.body == first.body {
				t.Errorf("second answer %q (Idempotent-Replayed %q) is a replay of %q; a 402 must not be stored", again.body, again.header.Get("Idempotent-Replayed"), first.body)
			}
			wantCount(t, "createPayment", s.charges.Load(), 2)
		}},
		{"other operations pass through", func(t *testing.T, h http.Handler, _ *shop) {
			a := do(t, h, "GET", "/orders", "")
			wantStatus(t, a, http.StatusOK)
			if a.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("GET /orders went through the idempotency layer")
			}
		}},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, srv := range servers() {
				t.Run(srv.name, func(t *testing.T) {
					for _, sc := range scenarios {
						t.Run(sc.name, func(t *testing.T) {
							s := &shop{store: &failingStore{Store: b.store(t)}, routerProblems: srv.routerProblems}
							if b.orders != nil {
								s.orders = b.orders(t)
							}
							sc.run(t, srv.handler(s, engineStore(s.store)), s)
							if s.orders != nil {
								wantCount(t, "createOrder (committed orders)", s.orders.count(t), s.created.Load())
							}
						})
					}
				})
			}
		})
	}
}

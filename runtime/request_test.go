package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// parts is r in the parts an adapter that is not net/http shows the engine.
func parts(t *testing.T, r *http.Request) *idem.Request {
	t.Helper()
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = b
	}
	return &idem.Request{
		Method: r.Method,
		Path:   r.URL.EscapedPath(),
		Query:  r.URL.RawQuery,
		Header: r.Header,
		Body:   body,
		HTTP:   func() (*http.Request, error) { return r, nil },
	}
}

// serveParts runs r through Engine.ServeRequest, with run answering 201.
func serveParts(t *testing.T, e *idem.Engine, op *idemop.Operation, r *http.Request, runs *atomic.Int64) *idem.Response {
	t.Helper()
	resp, err := e.ServeRequest(r.Context(), parts(t, r), op, strictRun(runs))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestServeRequestIdentifiesAsServe: a request served by Serve (net/http)
// and the same request given in its parts to ServeRequest are one request
// (the second is the first's replay), and each difference the fingerprint
// sees makes them two: the protocol and the identification are the same
// for both entry points.
func TestServeRequestIdentifiesAsServe(t *testing.T) {
	op := &idemop.Operation{ID: "CreatePet", FingerprintHeaders: []string{"X-Account"}}
	first := func() *http.Request {
		return engineReq("POST", "/pets/a%2Fb?b=2&a=1", `{"name":"rex","age":3}`, "Idempotency-Key", "k1", "X-Account", "acct", "X-Tenant", "t1")
	}
	cases := []struct {
		name   string
		second *http.Request
		want   int // status of the second answer
		runs   int64
	}{
		{"the same request, another JSON spelling and query order", engineReq("POST", "/pets/a%2Fb?a=1&b=2", `{ "age": 3, "name": "rex" }`, "Idempotency-Key", "k1", "X-Account", "acct", "X-Tenant", "t1"), http.StatusCreated, 0},
		{"another body", engineReq("POST", "/pets/a%2Fb?b=2&a=1", `{"name":"rex","age":4}`, "Idempotency-Key", "k1", "X-Account", "acct", "X-Tenant", "t1"), http.StatusUnprocessableEntity, 0},
		{"another escaped path", engineReq("POST", "/pets/a/b?b=2&a=1", `{"name":"rex","age":3}`, "Idempotency-Key", "k1", "X-Account", "acct", "X-Tenant", "t1"), http.StatusUnprocessableEntity, 0},
		{"another query", engineReq("POST", "/pets/a%2Fb?b=3&a=1", `{"name":"rex","age":3}`, "Idempotency-Key", "k1", "X-Account", "acct", "X-Tenant", "t1"), http.StatusUnprocessableEntity, 0},
		{"another fingerprint header", engineReq("POST", "/pets/a%2Fb?b=2&a=1", `{"name":"rex","age":3}`, "Idempotency-Key", "k1", "X-Account", "other", "X-Tenant", "t1"), http.StatusUnprocessableEntity, 0},
		{"another tenant", engineReq("POST", "/pets/a%2Fb?b=2&a=1", `{"name":"rex","age":3}`, "Idempotency-Key", "k1", "X-Account", "acct", "X-Tenant", "t2"), http.StatusCreated, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := idem.NewEngine(newMemStore(), idem.WithScopeFromHeader("X-Tenant"), idem.WithScopeSecret([]byte("0123456789abcdef")))
			var served atomic.Int64
			rec := httptest.NewRecorder()
			e.Serve(rec, first(), op, func(w http.ResponseWriter, _ *http.Request) {
				served.Add(1)
				w.WriteHeader(http.StatusCreated)
			})
			if rec.Code != http.StatusCreated || served.Load() != 1 {
				t.Fatalf("Serve answered %d after %d runs", rec.Code, served.Load())
			}
			var runs atomic.Int64
			resp := serveParts(t, e, op, c.second, &runs)
			if resp.Status != c.want || runs.Load() != c.runs {
				t.Errorf("ServeRequest answered %d after %d runs (%s), want %d after %d", resp.Status, runs.Load(), resp.Body, c.want, c.runs)
			}
			if c.want == http.StatusCreated && c.runs == 0 && resp.Header.Get(idemop.HeaderReplayed) != "true" {
				t.Errorf("the same request was not a replay: %v", resp.Header)
			}
		})
	}
}

// TestServeRequestProblems: ServeRequest answers what Serve answers before
// the handler runs, as problem documents, and runs nothing.
func TestServeRequestProblems(t *testing.T) {
	header := &idemop.Operation{ID: "CreatePet"}
	bodyKey := &idemop.Operation{ID: "Pay", KeyPointer: "/key"}
	cases := []struct {
		name string
		op   *idemop.Operation
		opts []idem.Option
		req  *http.Request
		drop bool // no HTTP func in the parts
		want int
		code string
	}{
		{"missing key", header, nil, engineReq("POST", "/pets", `{}`), false, 400, "missing-key"},
		{"two keys", header, nil, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "a", "Idempotency-Key", "b"), false, 400, "invalid-key"},
		{"overlong key", header, nil, engineReq("POST", "/pets", `{}`, "Idempotency-Key", strings.Repeat("k", 300)), false, 400, "invalid-key"},
		{"body over the limit", header, []idem.Option{idem.WithBodyLimit(8)}, engineReq("POST", "/pets", `{"name":"rex"}`, "Idempotency-Key", "k"), false, 413, "payload-too-large"},
		{"body key missing", bodyKey, nil, engineReq("POST", "/pay", `{"amount":1}`), false, 400, "missing-key"},
		{"body key not a string", bodyKey, nil, engineReq("POST", "/pay", `{"key":1}`), false, 400, "invalid-key"},
		{"WithScope without an http.Request", header, []idem.Option{idem.WithScope(func(*http.Request) (string, error) { return "t", nil })}, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k"), true, 500, "scope-failed"},
		{"WithScope's problem", header, []idem.Option{idem.WithScope(func(*http.Request) (string, error) {
			return "", idem.NewProblem(http.StatusUnauthorized, "no-tenant", "who are you?")
		})}, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k"), false, 401, "no-tenant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := idem.NewEngine(newMemStore(), append(c.opts, idem.WithLogger(slog.New(slog.DiscardHandler)))...)
			q := parts(t, c.req)
			if c.drop {
				q.HTTP = nil
			}
			var runs atomic.Int64
			resp, err := e.ServeRequest(context.Background(), q, c.op, strictRun(&runs))
			if err != nil {
				t.Fatal(err)
			}
			var p struct{ Code string }
			_ = json.Unmarshal(resp.Body, &p)
			if resp.Status != c.want || p.Code != c.code || runs.Load() != 0 {
				t.Errorf("answered %d %q after %d runs, want %d %q after none", resp.Status, p.Code, runs.Load(), c.want, c.code)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
		})
	}
}

// TestServeRequestWithScopeAndOptionalKey: a WithScope function gets the
// adapter's http.Request; an optional key that is absent runs the handler
// unprotected; the handler's error is returned after the lease is released.
func TestServeRequestWithScopeAndOptionalKey(t *testing.T) {
	var scoped atomic.Int64
	e := idem.NewEngine(newMemStore(), idem.WithScope(func(r *http.Request) (string, error) {
		scoped.Add(1)
		return r.Header.Get("X-Tenant"), nil
	}))
	op := &idemop.Operation{ID: "CreatePet"}
	var runs atomic.Int64
	for _, tenant := range []string{"a", "b", "a"} {
		serveParts(t, e, op, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "X-Tenant", tenant), &runs)
	}
	if runs.Load() != 2 || scoped.Load() != 3 {
		t.Errorf("%d runs, %d scope calls; want 2 (one per tenant) and 3", runs.Load(), scoped.Load())
	}

	optional := &idemop.Operation{ID: "Ping", Optional: true}
	runs.Store(0)
	for range 2 {
		if resp := serveParts(t, e, optional, engineReq("POST", "/ping", ``), &runs); resp.Status != http.StatusCreated {
			t.Errorf("without the optional key: %d", resp.Status)
		}
	}
	if runs.Load() != 2 {
		t.Errorf("without the optional key: %d runs, want 2 (unprotected)", runs.Load())
	}

	boom := errors.New("boom")
	fail := func(context.Context) (*idem.Response, error) { return nil, boom }
	for range 2 {
		if _, err := e.ServeRequest(context.Background(), parts(t, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "e")), op, fail); !errors.Is(err, boom) {
			t.Errorf("the handler's error: %v, want boom (the key released, so again on the retry)", err)
		}
	}
}

// TestCheckRequest: the step in front of a strict decoder answers the key
// header's problems and the body limit, and lets anything else through,
// a body key too (the strict middleware checks it).
func TestCheckRequest(t *testing.T) {
	e := idem.NewEngine(newMemStore(), idem.WithBodyLimit(16))
	header := &idemop.Operation{ID: "CreatePet"}
	cases := []struct {
		name string
		op   *idemop.Operation
		req  *http.Request
		want int // 0: go on
	}{
		{"a key and a small body", header, engineReq("POST", "/pets", `{not json`, "Idempotency-Key", "k"), 0},
		{"missing key", header, engineReq("POST", "/pets", `{}`), http.StatusBadRequest},
		{"malformed key", header, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "bad\x01key"), http.StatusBadRequest},
		{"body over the limit", header, engineReq("POST", "/pets", `{"name":"rex the dog"}`, "Idempotency-Key", "k"), http.StatusRequestEntityTooLarge},
		{"an optional key absent", &idemop.Operation{ID: "Ping", Optional: true}, engineReq("POST", "/ping", `{"name":"rex the dog"}`), 0},
		{"a body key, not checked here", &idemop.Operation{ID: "Pay", KeyPointer: "/key"}, engineReq("POST", "/pay", `{}`), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := idemgen.CheckRequest(e, parts(t, c.req), c.op)
			switch {
			case c.want == 0 && resp != nil:
				t.Errorf("answered %d %s, want to go on", resp.Status, resp.Body)
			case c.want != 0 && (resp == nil || resp.Status != c.want):
				t.Errorf("answered %+v, want %d", resp, c.want)
			}
		})
	}
}

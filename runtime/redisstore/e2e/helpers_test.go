package e2e_test

// Helpers of the engine's tests that its tests on Redis use too, as
// package runtime's tests declare them (engine_test.go, lease_test.go,
// largebody_bench_test.go, scope_test.go): these tests moved here from
// there so that the engine's test graph holds no Redis.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// harness is an engine over a store in front of a counting handler.
type harness struct {
	t    *testing.T
	eng  *idem.Engine
	op   *idemop.Operation
	runs atomic.Int64
	h    http.Handler // the protected handler
}

// newHarnessOn protects handler (nil: createHandler) for op, over store.
func newHarnessOn(t *testing.T, store idemstore.Store, op idemop.Operation, handler func(h *harness, w http.ResponseWriter, r *http.Request), opts ...idem.Option) *harness {
	t.Helper()
	if op.ID == "" {
		op.ID = "CreatePet"
	}
	if handler == nil {
		handler = createHandler
	}
	h := &harness{t: t, op: &op}
	h.eng = idem.NewEngine(store, opts...)
	h.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.eng.Serve(w, r, h.op, func(w http.ResponseWriter, r *http.Request) {
			h.runs.Add(1)
			handler(h, w, r)
		})
	})
	return h
}

// createHandler answers 201 with a body naming the run and echoing the
// request body, a cookie, a Location and an unlisted header.
func createHandler(h *harness, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	info, _ := idem.FromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/pets/1")
	w.Header().Set("X-Unlisted", "yes")
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "secret"})
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"run":%d,"fence":%d,"echo":%q}`, h.runs.Load(), info.Fence, body)
}

// req builds a request; headers are name, value pairs.
func engineReq(method, target, body string, headers ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// do serves r and returns the recorded answer.
func (h *harness) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.h.ServeHTTP(w, r)
	return w
}

// post sends POST /pets with body and key (none when key is "").
func (h *harness) post(key, body string) *httptest.ResponseRecorder {
	if key == "" {
		return h.do(engineReq("POST", "/pets", body))
	}
	return h.do(engineReq("POST", "/pets", body, "Idempotency-Key", key))
}

// checkProblem decodes and checks a problem answer.
func checkProblem(t *testing.T, w *httptest.ResponseRecorder, status int, code string) idem.Problem {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != idemop.ProblemContentType {
		t.Errorf("Content-Type = %q, want %q", ct, idemop.ProblemContentType)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	var raw map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatalf("problem body %q: %v", w.Body, err)
	}
	for _, m := range []string{"type", "title", "status", "detail", "code"} {
		if _, ok := raw[m]; !ok {
			t.Errorf("problem lacks member %q: %s", m, w.Body)
		}
	}
	var p idem.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	want := idem.Problem{Type: idemop.ProblemTypePrefix + code, Title: http.StatusText(status), Status: status, Code: code, Detail: p.Detail}
	if p != want {
		t.Errorf("problem = %+v, want %+v", p, want)
	}
	if p.Detail == "" {
		t.Error("problem detail is empty")
	}
	return p
}

// wantRuns checks how often the handler ran.
func (h *harness) wantRuns(n int64) {
	h.t.Helper()
	if got := h.runs.Load(); got != n {
		h.t.Fatalf("handler ran %d times, want %d", got, n)
	}
}

// signal returns a channel closed by the first call of the returned func.
func onceSignal() (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// blockingFirst is a handler whose first run closes started and waits for
// release; later runs answer at once.
func blockingFirst(started func(), release <-chan struct{}) func(h *harness, w http.ResponseWriter, r *http.Request) {
	return func(h *harness, w http.ResponseWriter, r *http.Request) {
		if h.runs.Load() == 1 {
			started()
			<-release
		}
		createHandler(h, w, r)
	}
}

// discardWriter is a client's writer that drops what it is sent.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// securedOp declares an API key in the X-API-Key header, as generated code
// does for a spec whose operation requires that scheme.
func securedOp(id string) *idemop.Operation {
	return &idemop.Operation{ID: id, Security: []idemop.Security{{Scheme: "ApiKeyAuth", Type: "apiKey", In: "header", Name: "X-API-Key"}}}
}

var testScopeSecret = []byte("0123456789abcdef0123456789abcdef")

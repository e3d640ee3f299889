package idem_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// harness is an engine over a memStore in front of a counting handler.
type harness struct {
	t     *testing.T
	store *memStore // nil unless made by newHarness
	eng   *idem.Engine
	op    *idemop.Operation
	runs  atomic.Int64
	h     http.Handler // the protected handler
}

// newHarness protects handler (nil: createHandler) for op, over a memStore.
func newHarness(t *testing.T, op idemop.Operation, handler func(h *harness, w http.ResponseWriter, r *http.Request), opts ...idem.Option) *harness {
	t.Helper()
	store := newMemStore()
	h := newHarnessOn(t, store, op, handler, opts...)
	h.store = store
	return h
}

// newHarnessOn is newHarness over any store; h.store stays nil.
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

// retryAfterSeconds parses the Retry-After header.
func retryAfterSeconds(t *testing.T, w *httptest.ResponseRecorder) int {
	t.Helper()
	n, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if err != nil {
		t.Fatalf("Retry-After %q: %v", w.Header().Get("Retry-After"), err)
	}
	return n
}

// wantRuns checks how often the handler ran.
func (h *harness) wantRuns(n int64) {
	h.t.Helper()
	if got := h.runs.Load(); got != n {
		h.t.Fatalf("handler ran %d times, want %d", got, n)
	}
}

// TestRequestCancelledDuringAcquire: the client goes away while the key is
// being acquired. The acquire still completes (its context is not the
// request's), the lease is given back at once, the handler does not run,
// and a retry with the same key runs it once.
func TestRequestCancelledDuringAcquire(t *testing.T) {
	store := newMemStore()
	var acquireCtxErr error
	h := newHarnessOn(t, storeFunc{Store: store, acquire: func(actx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
		acq, err := store.Acquire(actx, req)
		acquireCtxErr = actx.Err()
		return acq, err
	}}, idemop.Operation{}, nil)
	h.store = store
	ctx, cancel := context.WithCancel(context.Background())
	h.store.onAcquire = func(acq idemstore.Acquisition) {
		if acq.Outcome == idemstore.OutcomeFirstRun {
			cancel() // the client leaves as the record is created
		}
	}
	w := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k").WithContext(ctx))
	checkProblem(t, w, http.StatusServiceUnavailable, idemop.CodeRequestCancelled)
	if acquireCtxErr != nil {
		t.Errorf("acquire's context ended with the request: %v", acquireCtxErr)
	}
	h.wantRuns(0)
	if h.store.count("release") != 1 {
		t.Errorf("%d releases, want 1", h.store.count("release"))
	}
	if _, ok := h.store.get(idemstore.RecordKey("CreatePet", "", "k")); ok {
		t.Error("the lease of the cancelled request was not released")
	}
	h.store.onAcquire = nil
	if w := h.post("k", `{}`); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
		t.Fatalf("retry = %d %s, want a first run", w.Code, w.Body)
	}
	h.wantRuns(1)
}

// storeFunc is a Store whose Acquire is replaced.
type storeFunc struct {
	idemstore.Store
	acquire func(context.Context, idemstore.AcquireRequest) (idemstore.Acquisition, error)
}

func (s storeFunc) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	return s.acquire(ctx, req)
}

// TestNilStoreNamesEveryStore: the panic of an engine built on a nil
// store says how to build each of the stores idemgen ships.
func TestNilStoreNamesEveryStore(t *testing.T) {
	msg := mustPanic(t, func() { idem.NewEngine(nil) })
	for _, want := range []string{"redisstore.New(rdb)", "pgstore.New(pool)", "mysqlstore.New(db)", "memstore.New()"} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q lacks %q", msg, want)
		}
	}
}

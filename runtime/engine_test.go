package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// harness is an engine over a memStore in front of a counting handler.
type harness struct {
	t     *testing.T
	store *memStore // nil unless made by newHarness
	eng   *Engine
	op    *Operation
	runs  atomic.Int64
	h     http.Handler // the protected handler
}

// newHarness protects handler (nil: createHandler) for op, over a memStore.
func newHarness(t *testing.T, op Operation, handler func(h *harness, w http.ResponseWriter, r *http.Request), opts ...Option) *harness {
	t.Helper()
	store := newMemStore()
	h := newHarnessOn(t, store, op, handler, opts...)
	h.store = store
	return h
}

// newHarnessOn is newHarness over any store; h.store stays nil.
func newHarnessOn(t *testing.T, store Store, op Operation, handler func(h *harness, w http.ResponseWriter, r *http.Request), opts ...Option) *harness {
	t.Helper()
	if op.ID == "" {
		op.ID = "CreatePet"
	}
	if handler == nil {
		handler = createHandler
	}
	h := &harness{t: t, op: &op}
	h.eng = NewEngine(store, opts...)
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
	info, _ := FromContext(r.Context())
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
func checkProblem(t *testing.T, w *httptest.ResponseRecorder, status int, code string) Problem {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != ProblemContentType {
		t.Errorf("Content-Type = %q, want %q", ct, ProblemContentType)
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
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	want := Problem{Type: ProblemTypePrefix + code, Title: http.StatusText(status), Status: status, Code: code, Detail: p.Detail}
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

// chunkReader reads at most n bytes per call, then fails with err (nil:
// io.EOF) when its bytes are out.
type chunkReader struct {
	b   []byte
	n   int
	err error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

func TestReadAtMostIsReadAllLimited(t *testing.T) {
	errBroken := errors.New("broken")
	data := []byte(strings.Repeat("0123456789", 200)) // 2000 bytes
	for _, size := range []int{0, 1, 511, 512, 513, 1999, 2000} {
		for _, limit := range []int64{0, 1, 512, 1000, 1999, 2000, 2001, 1 << 20} {
			for _, hint := range []int64{-1, 0, int64(size), int64(size) + 7, 1 << 30} {
				for _, chunk := range []int{1, 100, 4096} {
					for _, fail := range []error{nil, errBroken} {
						want, wantErr := io.ReadAll(io.LimitReader(&chunkReader{b: data[:size], n: chunk, err: fail}, limit+1))
						got, err := readAtMost(&chunkReader{b: data[:size], n: chunk, err: fail}, limit+1, hint)
						if !bytes.Equal(got, want) || got == nil || err != wantErr {
							t.Fatalf("size %d limit %d hint %d chunk %d fail %v: got %d bytes, %v; want %d, %v",
								size, limit, hint, chunk, fail, len(got), err, len(want), wantErr)
						}
					}
				}
			}
		}
	}
}

func TestWriteReplayIsReplayResponse(t *testing.T) {
	for _, rec := range []*Record{
		{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Link": {"<a>", "<b>"}}, Body: []byte(`{}`)},
		{Status: 200, Header: http.Header{HeaderReplayed: {"no"}, "Location": nil}, Body: []byte("x"), BodyOmitted: true},
		{Status: 0},
		{Status: 204, Header: http.Header{}},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		want.Header().Set("X-Before", "1")
		got.Header().Set("X-Before", "1")
		if err := replayResponse(rec).Write(want); err != nil {
			t.Fatal(err)
		}
		if err := writeReplay(got, rec); err != nil {
			t.Fatal(err)
		}
		if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
			t.Errorf("record %+v: writeReplay wrote %d %v %q; replayResponse %d %v %q",
				rec, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}

func TestIsJSONContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"":                                 false,
		"application/json":                 true,
		"application/json; charset=utf-8":  true,
		"application/json; charset=UTF-8":  true,
		"Application/JSON":                 true,
		"application/json ; charset=utf-8": true,
		"application/merge-patch+json":     true,
		"application/json; charset":        false, // malformed parameter
		"text/json":                        false,
		"application/octet-stream":         false,
	} {
		if got := isJSONContentType(ct); got != want {
			t.Errorf("isJSONContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestRequestCancelledDuringAcquire: the client goes away while the key is
// being acquired. The acquire still completes (its context is not the
// request's), the lease is given back at once, the handler does not run,
// and a retry with the same key runs it once.
func TestRequestCancelledDuringAcquire(t *testing.T) {
	h := newHarness(t, Operation{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.store.onAcquire = func(acq Acquisition) {
		if acq.Outcome == OutcomeProceed {
			cancel() // the client leaves as the record is created
		}
	}
	var acquireCtxErr error
	h.eng.store = storeFunc{Store: h.store, acquire: func(actx context.Context, req AcquireRequest) (Acquisition, error) {
		acq, err := h.store.Acquire(actx, req)
		acquireCtxErr = actx.Err()
		return acq, err
	}}
	w := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k").WithContext(ctx))
	checkProblem(t, w, http.StatusServiceUnavailable, CodeRequestCancelled)
	if acquireCtxErr != nil {
		t.Errorf("acquire's context ended with the request: %v", acquireCtxErr)
	}
	h.wantRuns(0)
	if h.store.count("release") != 1 {
		t.Errorf("%d releases, want 1", h.store.count("release"))
	}
	if _, ok := h.store.get(storageKey("CreatePet", "", "k")); ok {
		t.Error("the lease of the cancelled request was not released")
	}
	h.store.onAcquire = nil
	if w := h.post("k", `{}`); w.Code != http.StatusCreated || w.Header().Get(HeaderReplayed) != "" {
		t.Fatalf("retry = %d %s, want a first run", w.Code, w.Body)
	}
	h.wantRuns(1)
}

// storeFunc is a Store whose Acquire is replaced.
type storeFunc struct {
	Store
	acquire func(context.Context, AcquireRequest) (Acquisition, error)
}

func (s storeFunc) Acquire(ctx context.Context, req AcquireRequest) (Acquisition, error) {
	return s.acquire(ctx, req)
}

package idem_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// benchStore is the smallest correct in-memory Store: one mutex, one map,
// no clock tricks. It isolates the engine's own cost in the benchmarks.
// With forget set, Complete deletes the record instead of keeping it, so a
// first-request benchmark can reuse one key without the map growing.
type benchStore struct {
	forget bool
	mu     sync.Mutex // guards recs
	recs   map[string]*benchRec
}

type benchRec struct {
	token, fingerprint string
	deadline           time.Time
	record             *idemstore.Record // nil while in progress
}

func newBenchStore() *benchStore { return &benchStore{recs: map[string]*benchRec{}} }

func newForgetfulStore() *benchStore { return &benchStore{forget: true, recs: map[string]*benchRec{}} }

// Acquire implements idemstore.Store.
func (s *benchStore) Acquire(_ context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[req.Key]
	switch {
	case !ok:
		s.recs[req.Key] = &benchRec{token: req.Token, fingerprint: req.Fingerprint, deadline: time.Now().Add(req.Lease)}
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, nil
	case r.fingerprint != req.Fingerprint:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil
	case r.record != nil:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: r.record}, nil
	default:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: time.Until(r.deadline)}, nil
	}
}

// Complete implements idemstore.Store.
func (s *benchStore) Complete(_ context.Context, key, token string, rec *idemstore.Record, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	if !ok || r.token != token || r.record != nil {
		return idemstore.ErrNotOwner
	}
	if s.forget {
		delete(s.recs, key)
		return nil
	}
	c := *rec
	c.Body = bytes.Clone(rec.Body)
	r.record = &c
	return nil
}

// Release implements idemstore.Store.
func (s *benchStore) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[key]; !ok || r.token != token || r.record != nil {
		return idemstore.ErrNotOwner
	}
	delete(s.recs, key)
	return nil
}

// Extend implements idemstore.Store.
func (s *benchStore) Extend(_ context.Context, key, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	if !ok || r.token != token || r.record != nil {
		return idemstore.ErrNotOwner
	}
	r.deadline = time.Now().Add(lease)
	return nil
}

// benchReqBody is the request body of every benchmark: a small JSON order.
var benchReqBody = []byte(`{"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"}`)

// benchRespBody is the 200-byte JSON answer of the benchmark handler.
var benchRespBody = []byte(`{"id":"ord_5c1f0e9a7b3d2c41","status":"created","customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","name":"steel kettle","quantity":2,"price_cents":4599,"currency":"EUR"}],"note":"leave at the door     "}`)

// benchOp is the operation of every benchmark.
var benchOp = idemop.Operation{ID: "CreateOrder", Method: http.MethodPost, Path: "/orders"}

// benchHandler answers 201 with benchRespBody after reading the request.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(benchRespBody)
})

// benchWriter is an http.ResponseWriter that keeps the status only. Its
// header map is cleared between requests, so it allocates nothing itself.
type benchWriter struct {
	h      http.Header
	status int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.status = code }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }

// benchRequests serves n requests with keys key(i) through h and fails on
// a status other than want. The per-request setup (a body reader and the key
// header) is the same for every benchmark, so differences between them are
// the middleware's.
func benchRequests(b *testing.B, h http.Handler, key func(i int) string, want int) {
	b.Helper()
	benchRequestsTyped(b, h, "application/json", key, want)
}

// benchRequestsTyped is benchRequests with the request's Content-Type.
func benchRequestsTyped(b *testing.B, h http.Handler, contentType string, key func(i int) string, want int) {
	b.Helper()
	serve := requestServer(h, contentType)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if status := serve(key(i)); status != want {
			b.Fatalf("request %d: status %d, want %d", i, status, want)
		}
	}
}

// requestServer returns a function that serves a request with the
// benchmarks' body, contentType and the given key through h and returns
// its status. It reuses one request, body reader and writer, so that it
// allocates nothing itself.
func requestServer(h http.Handler, contentType string) func(key string) int {
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/orders", nil)
	if err != nil {
		panic(err) // a constant, valid URL
	}
	r.Header.Set("Content-Type", contentType)
	keyVal := []string{""}
	r.Header["Idempotency-Key"] = keyVal
	body := bytes.NewReader(benchReqBody)
	rc := io.NopCloser(body)
	w := &benchWriter{h: http.Header{}}
	return func(key string) int {
		keyVal[0] = key
		body.Reset(benchReqBody)
		r.Body, r.ContentLength = rc, int64(len(benchReqBody))
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		return w.status
	}
}

// benchOneKey is the key of benchmarks that reuse one key.
func benchOneKey(int) string { return "0199c6d2-7b1e-7cc4-9a43-3f2a9c1e5b7d" }

// benchKeys returns n distinct 36-byte keys, built before the timer runs.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		s := strconv.Itoa(i)
		keys[i] = "0199c6d2-7b1e-7cc4-9a43-000000000000"[:36-len(s)] + s
	}
	return keys
}

// BenchmarkEngine measures the engine's hot path over an in-memory store:
// a first request (unique key: identify, fingerprint, acquire, heartbeat,
// record, complete, write) and a replay, against the bare handler with the
// same per-request setup. The -no-heartbeat and -raw-body cases take one
// cost away each (the heartbeat goroutine; the JSON decoding and canonical
// re-encoding of the body), to attribute the engine's cost; -scoped adds
// one (a scope, hashed with a keyed HMAC).
func BenchmarkEngine(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		benchRequests(b, benchHandler, benchOneKey, http.StatusCreated)
	})
	b.Run("first", func(b *testing.B) {
		h := idem.NewEngine(newForgetfulStore()).Middleware(benchOp)(benchHandler)
		benchRequests(b, h, benchOneKey, http.StatusCreated)
	})
	b.Run("first-no-heartbeat", func(b *testing.B) {
		h := idem.NewEngine(newForgetfulStore(), idem.WithHeartbeat(false)).Middleware(benchOp)(benchHandler)
		benchRequests(b, h, benchOneKey, http.StatusCreated)
	})
	b.Run("first-raw-body", func(b *testing.B) {
		h := idem.NewEngine(newForgetfulStore()).Middleware(benchOp)(benchHandler)
		benchRequestsTyped(b, h, "application/octet-stream", benchOneKey, http.StatusCreated)
	})
	b.Run("first-raw-body-no-heartbeat", func(b *testing.B) {
		h := idem.NewEngine(newForgetfulStore(), idem.WithHeartbeat(false)).Middleware(benchOp)(benchHandler)
		benchRequestsTyped(b, h, "application/octet-stream", benchOneKey, http.StatusCreated)
	})
	b.Run("first-scoped", func(b *testing.B) {
		scope := idem.WithScope(func(*http.Request) (string, error) { return "tenant-4711", nil })
		h := idem.NewEngine(newForgetfulStore(), scope, idem.WithScopeSecret([]byte("bench scope secret, 32 bytes ..."))).Middleware(benchOp)(benchHandler)
		benchRequests(b, h, benchOneKey, http.StatusCreated)
	})
	b.Run("first-unique-keys", func(b *testing.B) {
		h := idem.NewEngine(newBenchStore()).Middleware(benchOp)(benchHandler)
		keys := benchKeys(b.N)
		benchRequests(b, h, func(i int) string { return keys[i] }, http.StatusCreated)
	})
	b.Run("replay", func(b *testing.B) {
		h := idem.NewEngine(newBenchStore()).Middleware(benchOp)(benchHandler)
		benchRequests(b, h, benchOneKey, http.StatusCreated) // b.N-1 replays after the first
	})
	b.Run("replay-raw-body", func(b *testing.B) {
		h := idem.NewEngine(newBenchStore()).Middleware(benchOp)(benchHandler)
		benchRequestsTyped(b, h, "application/octet-stream", benchOneKey, http.StatusCreated)
	})
}

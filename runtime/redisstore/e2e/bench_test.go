package e2e_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// benchReqBody is the request body of every benchmark: a small JSON order.
var benchReqBody = []byte(`{"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"}`)

// benchParallelism is goroutines per GOMAXPROCS in the Redis benchmarks:
// enough callers in flight that Redis, not the round trip, sets the pace.
const benchParallelism = 8

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

// BenchmarkEngineRedis measures the whole server path (the generated
// wrapper's Engine.Serve over redisstore.Store on REDIS_URL, without HTTP
// networking) from parallel callers, against the handler between two
// EVALSHA of `return 1` (the floor) with the same per-request setup.
func BenchmarkEngineRedis(b *testing.B) {
	op := benchOp
	op.Retention = time.Minute
	// first: a new deployment's first requests (redisstore.New: one key
	// layout from the first request). The rolling upgrade's costs are
	// package previouslayout's benchmarks.
	b.Run("first", func(b *testing.B) {
		rdb, prefix := redistest.Keyspace(b)
		h := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix))).Middleware(op)(benchHandler)
		var n atomic.Int64
		benchParallel(b, h, func() string { return "k-" + strconv.FormatInt(n.Add(1), 10) })
	})
	b.Run("replay", func(b *testing.B) {
		rdb, prefix := redistest.Keyspace(b)
		h := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix))).Middleware(op)(benchHandler)
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/orders", bytes.NewReader(benchReqBody))
		if err != nil {
			b.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "k-replayed")
		w := &benchWriter{h: http.Header{}}
		if h.ServeHTTP(w, r); w.status != http.StatusCreated { // stores the result to replay
			b.Fatalf("first request: status %d", w.status)
		}
		b.ResetTimer()
		benchParallel(b, h, func() string { return "k-replayed" })
	})
	b.Run("floor", func(b *testing.B) {
		rdb, prefix := redistest.Keyspace(b)
		script := redis.NewScript("return 1")
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			keys := []string{prefix + ":" + r.Header.Get("Idempotency-Key")}
			if err := script.Run(r.Context(), rdb, keys).Err(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			benchHandler(w, r)
			_ = script.Run(r.Context(), rdb, keys).Err()
		})
		var n atomic.Int64
		benchParallel(b, h, func() string { return "k-" + strconv.FormatInt(n.Add(1), 10) })
	})
}

// benchParallel serves requests through h from parallel goroutines, each
// with its own request and writer, keys from key.
func benchParallel(b *testing.B, h http.Handler, key func() string) {
	b.Helper()
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		serve := requestServer(h, "application/json")
		for pb.Next() {
			if status := serve(key()); status != http.StatusCreated {
				b.Errorf("status %d, want 201", status)
				return
			}
		}
	})
}

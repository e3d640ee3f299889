package idem_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/redistest"
	idem "github.com/idemgen/idemgen/runtime"
)

// benchRedis returns a client of REDIS_URL (the benchmark is skipped
// without it, and fails under CI=true) and a key prefix whose keys are
// deleted when the benchmark ends.
func benchRedis(b *testing.B) (*redis.Client, string) {
	b.Helper()
	rdb := redistest.Real(b)
	prefix := redistest.Prefix(b)
	b.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		batch := make([]string, 0, 1000)
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == cap(batch) {
				_ = rdb.Unlink(ctx, batch...).Err()
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			_ = rdb.Unlink(ctx, batch...).Err()
		}
	})
	return rdb, prefix
}

// benchParallelism is goroutines per GOMAXPROCS in the Redis benchmarks:
// enough callers in flight that Redis, not the round trip, sets the pace.
const benchParallelism = 8

// benchRecord is the stored answer of the store benchmarks.
var benchRecord = &idem.Record{
	Status: http.StatusCreated,
	Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/ord_5c1f0e9a7b3d2c41"}},
	Body:   benchRespBody,
}

// benchFingerprint is a fingerprint-shaped string (hex SHA-256).
const benchFingerprint = "9f86d081884c7d659a2feb15d0c69e3ec8d0a4a5c1e0b5f1f2d0d5d1b2c3a4f5"

// BenchmarkRedisStore measures idem.RedisStore against REDIS_URL from
// parallel callers: a first request (SET NX and GET pipelined, EVALSHA
// complete, on a new key), a replay (SET NX and GET of a completed key) and
// the floor (two EVALSHA of `return 1`); the same first request and replay
// with acquire.lua alone (-script: a client that only runs scripts);
// and with a 2 KiB JSON body, stored as is (WithCompression(0)) and gzipped
// (the default above 1 KiB).
func BenchmarkRedisStore(b *testing.B) {
	ctx := context.Background()
	big := &idem.Record{Status: http.StatusCreated, Header: benchRecord.Header, Body: benchJSON(2048)}
	for _, bc := range []struct {
		name       string
		rec        *idem.Record
		opts       []idem.StoreOption
		scriptOnly bool
	}{
		{"", benchRecord, nil, false},
		{"-script", benchRecord, nil, true},
		{"-2KiB", big, []idem.StoreOption{idem.WithCompression(0)}, false},
		{"-2KiB-gzip", big, []idem.StoreOption{idem.WithCompression(1024)}, false},
	} {
		newStore := func(rdb *redis.Client, prefix string) *idem.RedisStore {
			opts := append([]idem.StoreOption{idem.WithPrefix(prefix)}, bc.opts...)
			if bc.scriptOnly {
				return idem.NewRedisStore(scriptsOnly{rdb}, opts...)
			}
			return idem.NewRedisStore(rdb, opts...)
		}
		b.Run("first"+bc.name, func(b *testing.B) {
			rdb, prefix := benchRedis(b)
			store := newStore(rdb, prefix)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := "CreateOrder::" + strconv.FormatInt(n.Add(1), 10)
					token := rand.Text()
					acq, err := store.Acquire(ctx, idem.AcquireRequest{Key: key, Token: token, Fingerprint: benchFingerprint, Lease: 30 * time.Second})
					if err != nil || acq.Outcome != idem.OutcomeProceed {
						b.Fatalf("acquire: %+v, %v", acq, err)
					}
					if err := store.Complete(ctx, key, token, bc.rec, time.Minute); err != nil {
						b.Fatalf("complete: %v", err)
					}
				}
			})
		})
		b.Run("replay"+bc.name, func(b *testing.B) {
			rdb, prefix := benchRedis(b)
			store := newStore(rdb, prefix)
			const key = "CreateOrder::replayed"
			token := rand.Text()
			if _, err := store.Acquire(ctx, idem.AcquireRequest{Key: key, Token: token, Fingerprint: benchFingerprint, Lease: 30 * time.Second}); err != nil {
				b.Fatal(err)
			}
			if err := store.Complete(ctx, key, token, bc.rec, time.Minute); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					acq, err := store.Acquire(ctx, idem.AcquireRequest{Key: key, Token: rand.Text(), Fingerprint: benchFingerprint, Lease: 30 * time.Second})
					if err != nil || acq.Outcome != idem.OutcomeReplay || len(acq.Record.Body) != len(bc.rec.Body) {
						b.Fatalf("acquire: %+v, %v", acq, err)
					}
				}
			})
		})
	}
	b.Run("floor", func(b *testing.B) {
		rdb, prefix := benchRedis(b)
		script := redis.NewScript("return 1")
		var n atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				keys := []string{prefix + ":CreateOrder::" + strconv.FormatInt(n.Add(1), 10)}
				if err := script.Run(ctx, rdb, keys).Err(); err != nil {
					b.Fatal(err)
				}
				if err := script.Run(ctx, rdb, keys).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// scriptsOnly hides every method of a client but the scripting ones, so
// the store cannot pipeline SET NX and GET.
type scriptsOnly struct{ redis.Scripter }

// benchJSON returns a JSON array of order lines, n bytes long, that
// compresses about as well as a real API response.
func benchJSON(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < n-100; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%06d","name":"item %d","quantity":%d,"price_cents":%d}`, (i*7919)%1000000, i, 1+i%5, 99+(i*104729)%50000)
	}
	b.WriteByte(']')
	for b.Len() < n {
		b.Truncate(b.Len() - 1)
		b.WriteString(" ]")
	}
	return b.Bytes()[:n]
}

// BenchmarkEngineRedis measures the whole server path (the generated
// wrapper's Engine.Serve over idem.RedisStore on REDIS_URL, without HTTP
// networking) from parallel callers, against the handler between two
// EVALSHA of `return 1` (the floor) with the same per-request setup.
func BenchmarkEngineRedis(b *testing.B) {
	op := benchOp
	op.Retention = time.Minute
	b.Run("first", func(b *testing.B) {
		rdb, prefix := benchRedis(b)
		h := idem.NewEngine(idem.NewRedisStore(rdb, idem.WithPrefix(prefix))).Middleware(op)(benchHandler)
		var n atomic.Int64
		benchParallel(b, h, func() string { return "k-" + strconv.FormatInt(n.Add(1), 10) })
	})
	b.Run("replay", func(b *testing.B) {
		rdb, prefix := benchRedis(b)
		h := idem.NewEngine(idem.NewRedisStore(rdb, idem.WithPrefix(prefix))).Middleware(op)(benchHandler)
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
		rdb, prefix := benchRedis(b)
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
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/orders", nil)
		if err != nil {
			b.Error(err)
			return
		}
		r.Header.Set("Content-Type", "application/json")
		keyVal := []string{""}
		r.Header["Idempotency-Key"] = keyVal
		body := bytes.NewReader(benchReqBody)
		rc := io.NopCloser(body)
		w := &benchWriter{h: http.Header{}}
		for pb.Next() {
			keyVal[0] = key()
			body.Reset(benchReqBody)
			r.Body, r.ContentLength = rc, int64(len(benchReqBody))
			clear(w.h)
			w.status = 0
			h.ServeHTTP(w, r)
			if w.status != http.StatusCreated {
				b.Errorf("status %d, want 201", w.status)
				return
			}
		}
	})
}

package redisstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// benchRespBody is a 200-byte JSON answer.
var benchRespBody = []byte(`{"id":"ord_5c1f0e9a7b3d2c41","status":"created","customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","name":"steel kettle","quantity":2,"price_cents":4599,"currency":"EUR"}],"note":"leave at the door     "}`)

// benchParallelism is goroutines per GOMAXPROCS in the Redis benchmarks:
// enough callers in flight that Redis, not the round trip, sets the pace.
const benchParallelism = 8

// benchRecord is the stored answer of the store benchmarks.
var benchRecord = &idemstore.Record{
	Status: http.StatusCreated,
	Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/ord_5c1f0e9a7b3d2c41"}},
	Body:   benchRespBody,
}

// benchFingerprint is a fingerprint-shaped string (hex SHA-256).
const benchFingerprint = "9f86d081884c7d659a2feb15d0c69e3ec8d0a4a5c1e0b5f1f2d0d5d1b2c3a4f5"

// BenchmarkRedisStore measures redisstore.Store against REDIS_URL from
// parallel callers: a first request (SET NX and GET pipelined, EVALSHA
// complete, on a new key), a replay (SET NX and GET of a completed key) and
// the floor (two EVALSHA of `return 1`); the same first request and replay
// with acquire.lua alone (-script: a client that only runs scripts);
// and with a 2 KiB JSON body, stored as is (WithCompression(0)) and gzipped
// (the default above 1 KiB).
func BenchmarkRedisStore(b *testing.B) {
	ctx := context.Background()
	big := &idemstore.Record{Status: http.StatusCreated, Header: benchRecord.Header, Body: benchJSON(2048)}
	for _, bc := range []struct {
		name       string
		rec        *idemstore.Record
		opts       []redisstore.Option
		scriptOnly bool
	}{
		{"", benchRecord, nil, false},
		{"-script", benchRecord, nil, true},
		{"-2KiB", big, []redisstore.Option{redisstore.WithCompression(0)}, false},
		{"-2KiB-gzip", big, []redisstore.Option{redisstore.WithCompression(1024)}, false},
	} {
		newStore := func(rdb *redis.Client, prefix string) *redisstore.Store {
			opts := append([]redisstore.Option{redisstore.WithPrefix(prefix)}, bc.opts...)
			if bc.scriptOnly {
				return redisstore.New(scriptsOnly{rdb}, opts...)
			}
			return redisstore.New(rdb, opts...)
		}
		b.Run("first"+bc.name, func(b *testing.B) {
			rdb, prefix := redistest.Keyspace(b)
			store := newStore(rdb, prefix)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := "CreateOrder::" + strconv.FormatInt(n.Add(1), 10)
					token := rand.Text()
					acq, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: benchFingerprint, Lease: 30 * time.Second})
					if err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
						b.Fatalf("acquire: %+v, %v", acq, err)
					}
					if err := store.Complete(ctx, key, token, bc.rec, time.Minute); err != nil {
						b.Fatalf("complete: %v", err)
					}
				}
			})
		})
		b.Run("replay"+bc.name, func(b *testing.B) {
			rdb, prefix := redistest.Keyspace(b)
			store := newStore(rdb, prefix)
			const key = "CreateOrder::replayed"
			token := rand.Text()
			if _, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: benchFingerprint, Lease: 30 * time.Second}); err != nil {
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
					acq, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: rand.Text(), Fingerprint: benchFingerprint, Lease: 30 * time.Second})
					if err != nil || acq.Outcome != idemstore.OutcomeReplay || len(acq.Record.Body) != len(bc.rec.Body) {
						b.Fatalf("acquire: %+v, %v", acq, err)
					}
				}
			})
		})
	}
	b.Run("floor", func(b *testing.B) {
		rdb, prefix := redistest.Keyspace(b)
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

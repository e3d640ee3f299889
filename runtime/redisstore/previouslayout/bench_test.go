package previouslayout_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// BenchmarkFirstRequests is the whole server path of first requests
// (Engine.Serve over the store on REDIS_URL, parallel callers) with the
// store a new deployment builds (new: redisstore.New) and with the
// migration on, during the rollout (both keys written) and after it, in
// the upgrade's window (the previous key asked for). Run the variants
// alternately.
func BenchmarkFirstRequests(b *testing.B) {
	op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders", Retention: time.Hour}
	body := []byte(`{"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR"}`)
	resp := bytes.Repeat([]byte("x"), 200)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(resp)
	})
	for _, c := range []struct {
		name   string
		marker time.Duration // the marker's age; < 0: no migration
	}{{"new", -1}, {"rollout", 0}, {"window", previouslayout.Rollout + time.Minute}} {
		b.Run(c.name, func(b *testing.B) {
			rdb, prefix := redistest.Keyspace(b)
			opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)}
			var store idemstore.Store = redisstore.New(rdb, opts...)
			if c.marker >= 0 {
				ms := time.Now().Add(-c.marker).UnixMilli()
				if err := rdb.Set(context.Background(), prefix+":"+previouslayout.KeyLayoutMarker, strconv.FormatInt(ms, 10), 0).Err(); err != nil {
					b.Fatal(err)
				}
				store = previouslayout.New(rdb, op.Retention, opts...)
			}
			h := idem.NewEngine(store, idem.WithLogger(nil)).Middleware(op)(handler)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("Idempotency-Key", "k-"+strconv.FormatInt(n.Add(1), 10))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != http.StatusCreated {
						b.Errorf("status %d, want 201", w.Code)
						return
					}
				}
			})
		})
	}
}

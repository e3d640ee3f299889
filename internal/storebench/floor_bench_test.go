package storebench_test

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/storebench"
)

// BenchmarkPostgresFloor runs the harness on PostgreSQL (Postgres.Variants:
// the one-transaction floor, the contract floor, pgstore's calls without
// the engine, pgstore through the engine with its reads alone and with the
// read lanes), first requests and replays, and prints the table of medians
// that BenchmarkMySQLFloor prints for MySQL (Run).
func BenchmarkPostgresFloor(b *testing.B) {
	p := storebench.NewPostgres(b)
	storebench.Run(b, p.Server(b), p.Variants(b)...)
}

// BenchmarkMySQLFloor is BenchmarkPostgresFloor on MySQL or MariaDB
// (MySQL.Variants), the server's innodb_flush_log_at_trx_commit = 1 (which
// the store's Check insists on).
func BenchmarkMySQLFloor(b *testing.B) {
	m := storebench.NewMySQL(b)
	storebench.Run(b, m.Server(b), m.Variants(b)...)
}

// BenchmarkPostgresBurst measures how fast keys complete in a burst of 20
// times the pool's size in concurrent first requests (100 keys, 8
// requests each, on the pool of 40), against the steady rate (40 callers,
// one new key each request, as many as the pool has connections), under
// pgstore through the engine, in alternating rounds (STOREBENCH_ROUNDS).
// It reports keys completed per second (keys/s) and, for the burst, the
// requests answered 503 per burst (503/op).
func BenchmarkPostgresBurst(b *testing.B) {
	const keys, perKey = 100, 8
	v := storebench.NewPostgres(b).StoreVariant(b)
	for round := range storebench.RoundCount() {
		b.Run(fmt.Sprintf("round%d/steady", round+1), func(b *testing.B) {
			b.SetParallelism(max(storebench.PoolSize/runtime.GOMAXPROCS(0), 1))
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					storebench.Send(b, v.Serve, rand.Text())
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "keys/s")
		})
		b.Run(fmt.Sprintf("round%d/burst", round+1), func(b *testing.B) {
			var ran, unavailable atomic.Int64
			start := time.Now()
			for range b.N {
				var wg sync.WaitGroup
				prefix := rand.Text()
				for i := range keys * perKey {
					key := fmt.Sprintf("%s-%d", prefix, i%keys)
					wg.Go(func() {
						req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount":5}`))
						req.Header.Set("Idempotency-Key", key)
						req.Header.Set("Content-Type", "application/json")
						rec := httptest.NewRecorder()
						v.Serve(rec, req)
						switch {
						case rec.Code == http.StatusCreated && rec.Header().Get("Idempotent-Replayed") == "":
							ran.Add(1)
						case rec.Code == http.StatusServiceUnavailable:
							unavailable.Add(1)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(ran.Load())/time.Since(start).Seconds(), "keys/s")
			b.ReportMetric(float64(unavailable.Load())/float64(b.N), "503/op")
		})
	}
}

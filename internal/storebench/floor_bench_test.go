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

// BenchmarkPostgresFloor runs the harness's handler under five layers,
// first requests and replays, from 16 parallel callers on two cores, in
// rounds that alternate the variants (take the medians of per-round
// ratios), reporting PostgreSQL round trips, WAL bytes and CPU per
// request:
//
//   - floor: the one-transaction floor of issue 45 (oneTransaction);
//   - contract-floor: the same, plus what the issue requires of any layer
//     besides (a duplicate answered at once, a fingerprint, headers,
//     expiry, a durable commit, a frozen owner's bound);
//   - pgstore-direct: pgstore's AcquireRun and Commit, without the engine;
//   - pgstore-unbatched: the handler under pgstore through the engine,
//     every read in a round trip of its own (WithReadLanes(-1));
//   - pgstore: the same with the read lanes, pgstore's default.
//
// Run it against a server with the durable defaults (fsync,
// synchronous_commit on): the commit's flush is the cost that matters.
func BenchmarkPostgresFloor(b *testing.B) {
	h := storebench.New(b)
	h.Run(b, h.FloorVariant(b), h.ContractFloorVariant(b), h.PgstoreDirectVariant(b), h.PgstoreUnbatchedVariant(b), h.PgstoreVariant(b))
}

// BenchmarkPostgresBurst measures how fast keys complete in a burst of 20
// times the pool's size in concurrent first requests (100 keys, 8
// requests each, on the pool of 40), against the steady rate (40 callers,
// one new key each request, as many as the pool has connections), under
// pgstore through the engine, in three alternating rounds. It reports
// keys completed per second (keys/s) and, for the burst, the requests
// answered 503 per burst (503/op).
func BenchmarkPostgresBurst(b *testing.B) {
	const keys, perKey = 100, 8
	h := storebench.New(b)
	v := h.PgstoreVariant(b)
	for round := range storebench.Rounds {
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

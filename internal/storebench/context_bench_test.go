package storebench_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/pgtest"
	"github.com/idemgen/idemgen/internal/storebench"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// undeadlined is pgstore with AcquireRun called on a context without a
// deadline, the least a store call's context can cost the driver.
type undeadlined struct{ *pgstore.Store }

func (u undeadlined) AcquireRun(_ context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	return u.Store.AcquireRun(context.Background(), req)
}

// BenchmarkStoreCallContext measures what the engine's store-call
// contexts cost a replay on pgstore: the engine as it is ("deadlined")
// against the same engine whose store ignores the call's context
// ("undeadlined"), alternating, in three rounds, with the machine's CPU
// per request (cpu-µs/op). pgx watches every query's context with
// context.AfterFunc, which registers on the context's lock; when
// concurrent calls shared one deadline context they queued there.
func BenchmarkStoreCallContext(b *testing.B) {
	h := storebench.New(b)
	s, _ := pgtest.Store(b, h.Pool)
	handler := h.Handler()
	variants := []storebench.Variant{
		{Name: "deadlined", Serve: engineServe(idem.NewEngine(s), handler)},
		{Name: "undeadlined", Serve: engineServe(idem.NewEngine(undeadlined{s}), handler)},
	}
	var keys [storebench.ReplayKeys]string
	for i := range keys {
		keys[i] = rand.Text()
		storebench.Send(b, variants[0].Serve, keys[i])
	}
	for round := range storebench.Rounds {
		for _, v := range variants {
			b.Run(fmt.Sprintf("round%d/%s", round+1, v.Name), func(b *testing.B) {
				var next atomic.Uint64
				cpu := storebench.MeasureCPU()
				b.SetParallelism(storebench.Senders)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						storebench.Send(b, v.Serve, keys[next.Add(1)%storebench.ReplayKeys])
					}
				})
				cpu.Report(b)
			})
		}
	}
}

func engineServe(e *idem.Engine, handler http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, storebench.Op, handler) }
}

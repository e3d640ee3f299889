package storebench_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/idemgen/idemgen/internal/storebench"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
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
// ("undeadlined"), alternating, in rounds (STOREBENCH_ROUNDS, default 3), with the machine's CPU
// per request (cpu-µs/op). pgx watches every query's context with
// context.AfterFunc, which registers on the context's lock; when
// concurrent calls shared one deadline context they queued there.
func BenchmarkStoreCallContext(b *testing.B) {
	h := storebench.NewPostgres(b)
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
	serve := map[string]http.HandlerFunc{}
	var names []string
	for _, v := range variants {
		serve[v.Name] = v.Serve
		names = append(names, v.Name)
	}
	storebench.Alternate(b, names, func(b *testing.B, name string, n uint64) bool {
		storebench.Send(b, serve[name], keys[n%storebench.ReplayKeys])
		return true
	})
}

func engineServe(e *idem.Engine, handler http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, storebench.Op, handler) }
}

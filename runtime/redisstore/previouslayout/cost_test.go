package previouslayout_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestRolloutCost is what the migration costs while it is on, on a fresh
// redis-server of the test's own, beside redisstore's TestNewDeploymentCost
// (BENCHMARKS.md): during the rollout a first request costs 4
// round trips (both keys acquired, both completed, each acknowledged on its
// own master) and a replay 1; a record of a 189-byte body is kept twice.
// After the window the store costs what redisstore.New does.
func TestRolloutCost(t *testing.T) {
	ctx := context.Background()
	for _, phase := range []struct {
		name          string
		marker        string // "": the store writes it (the rollout)
		first, replay int64  // round trips per request
	}{{"rollout", "", 4, 1}, {"after the window", "0", 2, 1}} {
		t.Run(phase.name, func(t *testing.T) {
			rdb := startRedisProc(t).client()
			if phase.marker != "" {
				if err := rdb.Set(ctx, "idem:"+previouslayout.KeyLayoutMarker, phase.marker, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			counter := redistest.CountCommands(rdb)
			store := previouslayout.New(rdb, 0, redisstore.WithLogger(nil))
			e := idem.NewEngine(store, idem.WithLogger(nil))
			op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders"}
			body := []byte(fmt.Sprintf(`{"id":"ord_5c1f0e9a7b3d2c41","status":"created","pad":"%0132d"}`, 0))
			serve := func(key string) *httptest.ResponseRecorder {
				r := engineReq(http.MethodPost, "/orders", `{"item":"`+key+`"}`, "Idempotency-Key", key)
				w := httptest.NewRecorder()
				e.Serve(w, r, &op, func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusCreated)
					_, _ = w.Write(body)
				})
				return w
			}
			key := func(i int) string { return fmt.Sprintf("0199c6d2-7b1e-7cc4-9a43-%012d", i) }
			// The first request reads the marker and has both stores check
			// the server: out of the counts.
			serve("warm-up")
			counter.Reset()
			const n = 50
			for i := range n {
				if w := serve(key(i)); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
					t.Fatalf("first request %d: %d %v", i, w.Code, w.Header())
				}
			}
			first := counter.RoundTrips() - counter.Calls()["hset"]
			for i := range n {
				if w := serve(key(i)); w.Header().Get(idemop.HeaderReplayed) != "true" {
					t.Fatalf("replay %d: %d %v", i, w.Code, w.Header())
				}
			}
			total := counter.RoundTrips() - counter.Calls()["hset"]
			var usage int64
			keys, err := rdb.Keys(ctx, "idem:*0199c6d2-*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				u, err := rdb.MemoryUsage(ctx, k, 0).Result()
				if err != nil {
					t.Fatal(err)
				}
				usage += u
			}
			t.Logf("%s: %d first requests + %d replays: %d round trips (%d, %d); %d keys, MEMORY USAGE %.1f bytes per record of a %d-byte body; commands %v",
				phase.name, n, n, total, first, total-first, len(keys), float64(usage)/n, len(body), counter.Calls())
			if first != phase.first*n || total-first != phase.replay*n {
				t.Errorf("round trips: %d per first request, %d per replay; want %d, %d", first/n, (total-first)/n, phase.first, phase.replay)
			}
			if want := n * map[bool]int{true: 2, false: 1}[phase.marker == ""]; len(keys) != want {
				t.Errorf("%d records' keys; want %d", len(keys), want)
			}
		})
	}
}

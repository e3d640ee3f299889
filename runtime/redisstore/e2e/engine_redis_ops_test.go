package e2e_test

import (
	"context"
	"maps"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestRedisOutage: a stopped Redis answers 503 store-unavailable with
// Retry-After: 1; once it is back, requests succeed again without
// restarting anything on the application's side.
func TestRedisOutage(t *testing.T) {
	check := func(t *testing.T, rdb *redis.Client, stop, start func()) {
		var storeErrors atomic.Int64
		h := newHarnessOn(t, redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t))), idemop.Operation{}, nil,
			idem.WithHooks(idem.Hooks{StoreError: func(context.Context, idem.Event) { storeErrors.Add(1) }}))
		if w := h.post("before", `{}`); w.Code != http.StatusCreated {
			t.Fatalf("before the outage: %d %s", w.Code, w.Body)
		}
		stop()
		w := h.post("during", `{}`)
		checkProblem(t, w, http.StatusServiceUnavailable, idemop.CodeStoreUnavailable)
		if w.Header().Get("Retry-After") != "1" {
			t.Errorf("Retry-After = %q, want 1", w.Header().Get("Retry-After"))
		}
		if storeErrors.Load() == 0 {
			t.Error("no StoreError hook during the outage")
		}
		start()
		if w := h.post("after", `{}`); w.Code != http.StatusCreated {
			t.Fatalf("after the outage: %d %s", w.Code, w.Body)
		}
		h.wantRuns(2)
	}
	t.Run("redis", func(t *testing.T) {
		p := startRedisProc(t)
		check(t, p.client(), p.stop, p.start)
	})
	t.Run("miniredis", func(t *testing.T) {
		m, rdb := redistest.Mini(t)
		check(t, rdb, m.Close, func() {
			if err := m.Restart(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// TestRedisRoundTrips: a first request costs two round trips (acquire's
// SET NX GET, the complete script and INFO replication pipelined), a replay
// and a mismatch the one SET NX GET each, a conflict that and the acquire
// script.
// Real Redis is measured with INFO commandstats on a server of the test's
// own; both backends also with a client-side command counter.
func TestRedisRoundTrips(t *testing.T) {
	measure := func(t *testing.T, rdb *redis.Client, stats bool) {
		counter := redistest.CountCommands(rdb)
		started, start := onceSignal()
		release := make(chan struct{})
		prefix := redistest.Prefix(t)
		store := redisstore.New(rdb, redisstore.WithPrefix(prefix))
		h := newHarnessOn(t, store, idemop.Operation{Lock: time.Minute},
			func(h *harness, w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Block") != "" {
					start()
					<-release
				}
				createHandler(h, w, r)
			},
			idem.WithHeartbeat(false)) // no extensions in the counts
		if err := store.Check(context.Background()); err != nil { // verified and loaded: the counts start after
			t.Fatal(err)
		}
		// The operation's first run has the store name its token, once,
		// in the background (one HSET): that too before the counts.
		h.post("warm-up", `{}`)
		for deadline := time.Now().Add(10 * time.Second); ; {
			names, err := redisstore.OperationNames(context.Background(), rdb, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the operation's token was not named within 10 s: %v", names)
			}
			runtime.Gosched()
		}

		cost := func(name string, want map[string]int64, trips int64, send func()) {
			t.Helper()
			var before map[string]int64
			if stats {
				before = redistest.CommandCalls(t, rdb)
			}
			counter.Reset()
			send()
			if got := counter.RoundTrips(); got != trips {
				t.Errorf("%s: %d round trips, want %d (%v)", name, got, trips, counter.Calls())
			}
			if calls := counter.Calls(); !maps.Equal(calls, want) {
				t.Errorf("%s: client sent %v, want %v", name, calls, want)
			}
			if stats {
				// Commandstats count the commands scripts call too, so
				// only the scripts are compared.
				after := redistest.CommandCalls(t, rdb)
				if d := after["evalsha"] - before["evalsha"]; d != want["evalsha"] || after["eval"] != before["eval"] {
					t.Errorf("%s: commandstats evalsha +%d, eval +%d; want +%d, +0",
						name, d, after["eval"]-before["eval"], want["evalsha"])
				}
			}
		}
		// Acquire is one SET NX GET; the completion's INFO replication
		// rides in its pipeline (the store knows of no replica, so it
		// counts them as it completes).
		plain := map[string]int64{"set": 1}
		plainAndScript := map[string]int64{"set": 1, "evalsha": 1}
		first := map[string]int64{"set": 1, "evalsha": 1, "info": 1}
		cost("first request", first, 2, func() { h.post("k", `{"a":1}`) })
		cost("replay", plain, 1, func() { h.post("k", `{"a":1}`) })
		cost("mismatch", plain, 1, func() { h.post("k", `{"a":2}`) })
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "busy", "X-Block", "1"))
		}()
		<-started
		cost("conflict", plainAndScript, 2, func() { h.post("busy", `{}`) })
		cost("mismatch in progress", plain, 1, func() { h.post("busy", `{"a":3}`) })
		close(release)
		<-done
	}
	t.Run("redis", func(t *testing.T) {
		p := startRedisProc(t)
		measure(t, p.client(), true)
	})
	t.Run("miniredis", func(t *testing.T) {
		_, rdb := redistest.Mini(t)
		measure(t, rdb, false)
	})
}

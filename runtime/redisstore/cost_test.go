package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// costBody is a 189-byte JSON response body, the record size
// BENCHMARKS.md reports.
var costBody = []byte(fmt.Sprintf(`{"id":"ord_5c1f0e9a7b3d2c41","status":"created","pad":"%0132d"}`, 0))

// TestNewDeploymentCost: a new deployment, wired as the README shows
// (redisstore.New on a go-redis client, the default prefix), on a fresh
// redis-server of its own: 50 first requests and 50 replays cost 150 round
// trips (2 per first request, 1 per replay) once the store has checked the
// server, and a record of a 189-byte body takes at most body + 175 bytes of
// Redis memory, by MEMORY USAGE and by the growth of used_memory (less the
// clients' buffers) from 2,100 to 4,000 records. Counts, not times: it holds on a loaded machine too.
func TestNewDeploymentCost(t *testing.T) {
	if len(costBody) != 189 {
		t.Fatalf("body of %d bytes, want 189", len(costBody))
	}
	ctx := context.Background()
	srv := redistest.Server(t, redisproc.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	counter := redistest.CountCommands(rdb)

	store := redisstore.New(rdb, redisstore.WithLogger(nil))
	e := idem.NewEngine(store, idem.WithLogger(nil))
	op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders"}
	runs := 0
	serve := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"`+key+`"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		e.Serve(w, r, &op, func(w http.ResponseWriter, _ *http.Request) {
			runs++
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(costBody)
		})
		return w
	}
	key := func(i int) string { return fmt.Sprintf("0199c6d2-7b1e-7cc4-9a43-%012d", i) } // 36 bytes, a UUID's
	if err := store.Check(ctx); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	const n = 50
	for i := range n {
		if w := serve(key(i)); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
			t.Fatalf("first request %d: %d %v", i, w.Code, w.Header())
		}
	}
	first := counter.RoundTrips()
	for i := range n {
		if w := serve(key(i)); w.Header().Get(idemop.HeaderReplayed) != "true" {
			t.Fatalf("replay %d: %d %v", i, w.Code, w.Header())
		}
	}
	// The engine names each operation's token once, in the background
	// (HSET, its own round trip): once per operation and process, not
	// per request.
	calls := counter.Calls()
	named := calls["hset"]
	total := counter.RoundTrips() - named
	first -= min(named, first)
	t.Logf("%d first requests + %d replays: %d round trips (%d, %d), and %d naming the operation; commands %v", n, n, total, first, total-first, named, calls)
	if total != 3*n || first > 2*n || named > 1 || runs != n {
		t.Errorf("%d first requests + %d replays: %d round trips (at least %d for the first requests), %d naming the operation, %d runs; want %d (%d), at most 1, %d",
			n, n, total, first, named, runs, 3*n, 2*n, n)
	}
	if keys, err := rdb.DBSize(ctx).Result(); err != nil || keys != n+1 { // + the operation names' hash
		t.Errorf("keys on the server: %d, %v; want %d records and the operation names", keys, err, n)
	}

	// Memory: MEMORY USAGE of the records, and the growth of used_memory
	// over more of them.
	var usage int64
	for i := range n {
		skey := "idem:" + recordKeyOf(t, rdb, op, key(i))
		u, err := rdb.MemoryUsage(ctx, skey, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		usage += u
	}
	perRecord := float64(usage) / n
	// used_memory grows by the record, its key's entries in the keyspace
	// and expires dictionaries, and their bucket arrays, which double at
	// 2^k keys: measured from 2,100 to 4,000 records, between two
	// doublings, it is the per-record cost; the arrays add 8 to 16 bytes
	// per key and dictionary, amortised. The
	// clients' buffers (mem_clients_normal: a connection the pool opens
	// meanwhile) are no record's.
	const from, to = 2100, 4000
	fill := func(lo, hi int) {
		t.Helper()
		for i := lo; i < hi; i++ {
			if w := serve(key(i)); w.Code != http.StatusCreated {
				t.Fatalf("request %d: %d", i, w.Code)
			}
		}
	}
	fill(n, from)
	before := usedMemory(t, rdb)
	fill(from, to)
	used := float64(usedMemory(t, rdb)-before) / (to - from)
	limit := float64(len(costBody) + 175)
	t.Logf("bytes per record of a %d-byte body: MEMORY USAGE %.1f, used_memory growth %.1f (limit %.0f)", len(costBody), perRecord, used, limit)
	if perRecord > limit || used > limit {
		t.Errorf("bytes per record of a %d-byte body: MEMORY USAGE %.1f, used_memory growth %.1f; want at most %.0f", len(costBody), perRecord, used, limit)
	}
}

// recordKeyOf is the storage key (without the prefix) of op's record of
// key, as the one key of the server that ends in it.
func recordKeyOf(t *testing.T, rdb *redis.Client, op idemop.Operation, key string) string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), "idem:*:"+key).Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of %s: %v, %v; want one", key, keys, err)
	}
	return strings.TrimPrefix(keys[0], "idem:")
}

// usedMemory is INFO memory's used_memory less mem_clients_normal, the
// buffers of the clients' connections.
func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		if name, v, ok := strings.Cut(line, ":"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				fields[name] = n
			}
		}
	}
	used, ok1 := fields["used_memory"]
	clients, ok2 := fields["mem_clients_normal"]
	if !ok1 || !ok2 {
		t.Fatalf("INFO memory without used_memory or mem_clients_normal: %q", info)
	}
	return used - clients
}

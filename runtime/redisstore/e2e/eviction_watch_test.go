package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// TestEvictionPolicySwitchedAtRunTime: an evicting maxmemory-policy
// switched on under a running service (the full check runs every 30 s) is
// noticed by the store's policy watch within about a second, not at the
// next full check: from then on requests are refused 503
// store-misconfigured, so completed keys that memory pressure then evicts
// are not run again silently on retry. Real redis-server.
func TestEvictionPolicySwitchedAtRunTime(t *testing.T) {
	ctx := context.Background()
	srv := configuredServer(t, "--maxmemory", "256mb")
	rdb := faultClient(t, srv.Addr())
	runs := newFaultRuns()
	store := redisstore.New(rdb, redisstore.WithPrefix("watch"), redisstore.WithCheckInterval(redisstore.DefaultCheckInterval))
	if err := store.Check(ctx); err != nil {
		t.Fatalf("Check on noeviction: %v", err)
	}
	h := idem.NewEngine(store).Middleware(faultOp)(faultHandler(runs, nil))
	const done = 500
	for i := range done {
		if w := faultPost(h, fmt.Sprintf("done-%d", i)); w.Code != http.StatusCreated {
			t.Fatalf("done-%d: %d %s", i, w.Code, w.Body)
		}
	}

	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	// Well under the 30 s check interval: only the watch can see it in time.
	waitRefused(t, h, runs, "the evicting policy noticed before the next full check")

	// Another application fills the memory: Redis evicts, records among them.
	used := infoField(t, rdb, "memory", "used_memory")
	if err := rdb.ConfigSet(ctx, "maxmemory", fmt.Sprint(used+(1<<20))).Err(); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 1024)
	for batch := range 20 {
		pipe := rdb.Pipeline()
		for i := range 1000 {
			pipe.Set(ctx, fmt.Sprintf("other:%d:%d", batch, i), value, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if infoField(t, rdb, "stats", "evicted_keys") == 0 {
		t.Fatal("nothing was evicted: the test pushed too little")
	}

	for i := range done {
		key := fmt.Sprintf("done-%d", i)
		w := faultPost(h, key)
		replayed := w.Code == http.StatusCreated && w.Header().Get(idemop.HeaderReplayed) == "true"
		refused := w.Code == http.StatusServiceUnavailable && faultCode(w) == idemop.CodeStoreMisconfigured
		if !replayed && !refused {
			t.Errorf("%s: %d %s; want the replay or 503 store-misconfigured", key, w.Code, w.Body)
		}
		if r := runs.of(key); r != 1 {
			t.Fatalf("%s ran %d times: a completed key ran again", key, r)
		}
	}
}

// infoField reads an integer field of an INFO section.
func infoField(t *testing.T, rdb *redis.Client, section, field string) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			var n int64
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

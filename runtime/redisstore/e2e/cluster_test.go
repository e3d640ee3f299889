package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// Redis Cluster tests. The store runs every script on exactly one key, so
// a ClusterClient routes each call to the key's master and nothing changes
// for the engine. scripts/test.sh starts three masters and exports
// REDIS_CLUSTER_ADDRS; the shard-outage test starts a cluster of its own
// (redis-server child processes) because it kills a master.

// clusterRecords counts the records under prefix on each master, by
// address, and the distinct hash slots they occupy.
func clusterRecords(t *testing.T, rdb *redis.ClusterClient, prefix string) (perMaster map[string]int, slots map[int64]bool) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	perMaster, slots = map[string]int{}, map[int64]bool{}
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		n := 0
		for iter.Next(ctx) {
			if _, _, _, ok := idemstore.SplitRecordKey(strings.TrimPrefix(iter.Val(), prefix+":")); !ok {
				continue // the store's layout marker and names of tokens
			}
			slot, err := c.ClusterKeySlot(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			slots[slot] = true
			mu.Unlock()
			n++
		}
		mu.Lock()
		perMaster[c.Options().Addr] = n
		mu.Unlock()
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return perMaster, slots
}

// TestClusterConcurrentSameKey sends one key from 64 goroutines at once
// through an engine on a ClusterClient: exactly one execution; every other
// answer is its replay or a 409.
func TestClusterConcurrentSameKey(t *testing.T) {
	rdb, prefix := redistest.Cluster(t)
	runs := newFaultRuns()
	h := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix))).Middleware(faultOp)(faultHandler(runs, nil))
	start := make(chan struct{})
	codes := make(chan int, 64)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			<-start
			codes <- faultPost(h, "cluster-one-key").Code
		})
	}
	close(start)
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if n := runs.of("cluster-one-key"); n != 1 {
		t.Errorf("64 concurrent requests ran the handler %d times, want 1", n)
	}
	if count[http.StatusCreated]+count[http.StatusConflict] != 64 || count[http.StatusCreated] < 1 {
		t.Errorf("answers %v; want only 201 and 409, at least one 201", count)
	}
}

// TestClusterDistinctKeys sends 1,000 distinct keys from 16 workers: 1,000
// executions, one per key, and the records spread over every master and
// most hash slots (the store adds no hash tag that would pin them to one).
func TestClusterDistinctKeys(t *testing.T) {
	rdb, prefix := redistest.Cluster(t)
	runs := newFaultRuns()
	h := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix))).Middleware(faultOp)(faultHandler(runs, nil))
	const keys = 1000
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				key := fmt.Sprintf("cluster-key-%d", i)
				if w := faultPost(h, key); w.Code != http.StatusCreated {
					t.Errorf("%s: %d %s", key, w.Code, w.Body)
				}
			}
		})
	}
	for i := range keys {
		next <- i
	}
	close(next)
	wg.Wait()
	snap := runs.snapshot()
	if len(snap) != keys {
		t.Errorf("%d keys ran, want %d", len(snap), keys)
	}
	for k, n := range snap {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
	perMaster, slots := clusterRecords(t, rdb, prefix)
	total := 0
	for addr, n := range perMaster {
		total += n
		if n == 0 {
			t.Errorf("master %s holds no record; keys are not spread", addr)
		}
	}
	if total != keys || len(slots) < keys/2 {
		t.Errorf("%d records in %d slots over %v; want %d records in at least %d slots", total, len(slots), perMaster, keys, keys/2)
	}
	t.Logf("records per master %v, distinct slots %d", perMaster, len(slots))
}

// TestClusterUnreachable points the store at a ClusterClient whose only
// seed address has nothing listening (a port just found free), so the
// client can neither load the slot map nor reach a node: fail closed
// answers 503 store-unavailable without running the handler, fail-open runs
// it marked degraded. It needs no Redis at all, and checks that the
// ClusterClient's own failure (no slots loaded) reaches the engine as a
// store error rather than as something else.
func TestClusterUnreachable(t *testing.T) {
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:       []string{fmt.Sprintf("127.0.0.1:%d", port)},
		DialTimeout: 250 * time.Millisecond,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb)
	runs := newFaultRuns()

	closed := idem.NewEngine(store).Middleware(faultOp)(faultHandler(runs, nil))
	w := faultPost(closed, "cluster-down")
	if w.Code != http.StatusServiceUnavailable || faultCode(w) != idemop.CodeStoreUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Errorf("fail closed: %d Retry-After %q %s; want 503 store-unavailable, Retry-After 1", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if n := runs.of("cluster-down"); n != 0 {
		t.Errorf("fail closed ran the handler %d times", n)
	}

	open := idem.NewEngine(store, idem.WithFailOpen(true)).Middleware(faultOp)(faultHandler(runs, nil))
	w = faultPost(open, "cluster-down")
	if w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderDegraded) != "true" {
		t.Errorf("fail open: %d degraded %q; want 201 marked degraded", w.Code, w.Header().Get(idemop.HeaderDegraded))
	}
	if _, err := store.Acquire(context.Background(), idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "f", Lease: time.Second}); !errors.Is(err, idemstore.ErrStoreUnavailable) {
		t.Errorf("Acquire on an unreachable cluster: %v, want ErrStoreUnavailable", err)
	}
}

// TestClusterShardDown kills one master of a private three-master cluster
// (append-only file with fsync always, as a production store runs) under
// traffic. Keys whose slot lives on the dead master are answered 503
// without running; keys on the live masters are answered 201 or, once the
// cluster declares itself failed, 503. After the master restarts from its
// own directory and the cluster is ok again, the same engine answers every
// key not yet answered 201, and no key ever ran twice: records completed
// before the crash are replayed, not run again.
func TestClusterShardDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	ctx := context.Background()
	faultServer(t, false) // skips (or fails under CI=true) without redis-server
	cluster, err := redisproc.StartCluster(ctx, 3, time.Second, redisproc.Options{Persist: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        cluster.Addrs(),
		DialTimeout:  250 * time.Millisecond,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	const prefix = "shard"
	runs := newFaultRuns()
	h := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix)), idem.WithStoreTimeout(2*time.Second)).
		Middleware(faultOp)(faultHandler(runs, nil))

	// Which master owns each key's slot, by the cluster's own answer.
	victim := cluster.Nodes[1]
	victimSlots := map[int64]bool{}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.Port == int64(victim.Port()) {
				for _, r := range sh.Slots {
					for s := r.Start; s <= r.End; s++ {
						victimSlots[s] = true
					}
				}
			}
		}
	}
	if len(victimSlots) == 0 {
		t.Fatalf("no slots found for the victim %s in %+v", victim.Addr(), shards)
	}
	onVictim := func(key string) bool {
		slot, err := rdb.ClusterKeySlot(ctx, prefix+":"+idemstore.RecordKey(faultOp.ID, "", key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return victimSlots[slot]
	}

	const before, during = 100, 100
	key := func(i int) string { return fmt.Sprintf("shard-key-%d", i) }
	victimKeys := map[string]bool{}
	for i := range before + during {
		victimKeys[key(i)] = onVictim(key(i))
	}
	for i := range before {
		if w := faultPost(h, key(i)); w.Code != http.StatusCreated {
			t.Fatalf("%s before the crash: %d %s", key(i), w.Code, w.Body)
		}
	}

	victim.Kill()
	// Each request to the dead master waits out go-redis's dial retries,
	// so send them in parallel. A key answered 201 now is done, as it would
	// be for a client: its completion may have been refused once the
	// cluster declared itself failed, leaving its lease to expire, and
	// retrying it would only meet 409s.
	var wg sync.WaitGroup
	var mu sync.Mutex // guards answered
	answered := map[string]bool{}
	for i := range before + during {
		wg.Go(func() {
			w := faultPost(h, key(i))
			if w.Code == http.StatusCreated {
				mu.Lock()
				answered[key(i)] = true
				mu.Unlock()
			}
			switch {
			case victimKeys[key(i)] && (w.Code != http.StatusServiceUnavailable || faultCode(w) != idemop.CodeStoreUnavailable):
				t.Errorf("%s (slot on the dead master): %d %s; want 503 store-unavailable", key(i), w.Code, w.Body)
			case !victimKeys[key(i)] && w.Code != http.StatusCreated && w.Code != http.StatusServiceUnavailable:
				t.Errorf("%s (slot on a live master): %d %s; want 201, or 503 once the cluster has failed", key(i), w.Code, w.Body)
			}
		})
	}
	wg.Wait()

	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitOK(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	pending := map[string]bool{}
	for i := range before + during {
		if !answered[key(i)] {
			pending[key(i)] = true
		}
	}
	faultEventually(t, 30*time.Second, "every key not yet answered 201 answered after the master restarted", func() bool {
		for k := range pending {
			if w := faultPost(h, k); w.Code == http.StatusCreated {
				delete(pending, k)
			}
		}
		return len(pending) == 0
	})
	onDead := 0
	for i := range before + during {
		if n := runs.of(key(i)); n != 1 {
			t.Errorf("%s ran %d times, want 1", key(i), n)
		}
		if victimKeys[key(i)] {
			onDead++
		}
	}
	t.Logf("%d of %d keys had their slot on the killed master", onDead, before+during)
}

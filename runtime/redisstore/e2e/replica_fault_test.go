package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// Failover tests: a master with a replica, the master lost, the replica
// promoted. Redis replicates asynchronously, so a completion the master
// answered may never reach the replica; the store waits for a replica's
// acknowledgement (WAIT) and marks a first answer Idempotency-Degraded when
// none comes in time. What every test here checks is the promise of the
// docs/redis.md: a first answer that is a plain 2xx (neither replayed nor
// degraded) is never undone by the failover, so its key never runs again.

// replicaPair is a master and its replica, the replica connected to the
// master through a proxy (link) that the test can freeze to partition them.
type replicaPair struct {
	master, replica *redisproc.Server
	link            *redisproc.Proxy
}

// startReplicaPair starts a master and a replica of it through a proxy, and
// waits until the replica is in sync.
func startReplicaPair(t *testing.T) *replicaPair {
	t.Helper()
	master := faultServerWith(t, redisproc.Options{})
	link, err := redisproc.StartProxy(master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	replica := faultServerWith(t, redisproc.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(link.Port())}})
	waitReplicas(t, master.Addr(), 1)
	return &replicaPair{master: master, replica: replica, link: link}
}

// waitReplicas waits until the server at addr reports n connected replicas
// in sync (state=online).
func waitReplicas(t *testing.T, addr string, n int) {
	t.Helper()
	if err := redisproc.WaitReplicas(context.Background(), addr, n); err != nil {
		t.Fatal(err)
	}
}

// promote makes the server at addr a master (REPLICAOF NO ONE), as an
// operator or a failover script would.
func promote(t *testing.T, addr string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
}

// firstAnswer classifies a first answer: plain (2xx, neither replayed nor
// degraded), degraded (2xx marked Idempotency-Degraded), or what else.
func firstAnswer(w *httptest.ResponseRecorder) string {
	switch {
	case w.Code/100 == 2 && w.Header().Get(idemop.HeaderDegraded) == "true":
		return "degraded"
	case w.Code/100 == 2 && w.Header().Get(idemop.HeaderReplayed) != "true":
		return "plain"
	case w.Code/100 == 2:
		return "replayed"
	case w.Code == http.StatusServiceUnavailable:
		return "503"
	}
	return strconv.Itoa(w.Code) + " " + faultCode(w)
}

// TestFailoverPartitionedReplica reproduces the loss of acknowledged
// completions: the default wiring (redisstore.New on a plain client) reaches
// a master with one replica through a proxy that follows the promotion.
// Twenty keys complete while replication is healthy; then the replication
// link is cut (a proxy that stops forwarding), twenty more keys complete,
// the master is killed and the replica promoted. Every key is retried after
// the failover: the first twenty replay; of the partitioned twenty, none
// may have been answered a plain 2xx, since the promoted replica never saw
// their completions and they run again.
func TestFailoverPartitionedReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	pair := startReplicaPair(t)
	front, err := redisproc.StartProxy(pair.master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	rdb := redis.NewClient(&redis.Options{Addr: front.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	runs := newFaultRuns()
	var completed, unreplicated atomic.Int64
	hooks := idem.Hooks{
		Completed: func(context.Context, idem.Event) { completed.Add(1) },
		Unreplicated: func(_ context.Context, ev idem.Event) {
			if !errors.Is(ev.Err, idemstore.ErrUnreplicated) || ev.Response == nil || ev.Status != http.StatusCreated {
				t.Errorf("Unreplicated event %+v; want ErrUnreplicated, status 201 and the response", ev)
			}
			unreplicated.Add(1)
		},
	}
	var logged logBuffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	eng := idem.NewEngine(redisstore.New(rdb), idem.WithHooks(hooks), idem.WithLogger(logger))
	h := eng.Middleware(faultOp)(faultHandler(runs, nil))

	first := map[string]string{} // key -> firstAnswer
	var mu sync.Mutex            // guards first
	send := func(prefix string) {
		var wg sync.WaitGroup
		for i := range 20 {
			key := fmt.Sprintf("%s-%d", prefix, i)
			wg.Go(func() {
				a := firstAnswer(faultPost(h, key))
				mu.Lock()
				first[key] = a
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	send("healthy")
	// A replica in sync acknowledges within the default timeout; on a
	// loaded test machine a few may not, and are answered degraded, which
	// is safe. Most must be plain, or the acknowledgement does not work.
	healthy := 0
	for i := range 20 {
		switch a := first[fmt.Sprintf("healthy-%d", i)]; a {
		case "plain":
			healthy++
		case "degraded":
		default:
			t.Errorf("healthy-%d: first answer %s while replication is healthy; want plain (or degraded)", i, a)
		}
	}
	if healthy < 15 {
		t.Errorf("%d of 20 first answers plain while replication is healthy; want most", healthy)
	}

	pair.link.Freeze() // the replica hears nothing more, the master does not notice
	send("partitioned")
	// Each answer counted once by the hooks, and the burst logged once.
	unacked := unreplicated.Load()
	if c := completed.Load(); c+unacked != 40 || unacked == 0 {
		t.Errorf("hooks: Completed %d, Unreplicated %d; want 40 in all, some unreplicated", c, unacked)
	}
	if lines := logged.lines("not acknowledged by a replica"); len(lines) != 1 {
		t.Errorf("the unacknowledged burst was logged %d times; want once: %q", len(lines), lines)
	}
	pair.master.Kill()
	promote(t, pair.replica.Addr())
	front.Retarget(pair.replica.Addr())

	counts := map[string]int{}
	for key, a := range first {
		counts[a]++
		var w *httptest.ResponseRecorder
		faultEventually(t, 10*time.Second, "an answer other than 503 after the failover", func() bool {
			w = faultPost(h, key)
			return w.Code != http.StatusServiceUnavailable
		})
		if w.Code/100 != 2 {
			t.Errorf("%s: retry answered %d %s", key, w.Code, w.Body)
		}
		switch n := runs.of(key); {
		case a == "plain" && n != 1:
			t.Errorf("%s: first answered a plain %s, then ran %d times in all: the failover undid an answered completion", key, "2xx", n)
		case a == "plain" && w.Header().Get(idemop.HeaderReplayed) != "true":
			t.Errorf("%s: first answered a plain 2xx, retry not replayed", key)
		case a != "plain" && a != "degraded" && a != "503":
			t.Errorf("%s: first answer %s; want plain, degraded or 503", key, a)
		}
	}
	if counts["degraded"] != int(unacked) {
		t.Errorf("%d degraded first answers, %d Unreplicated hook calls; want equal", counts["degraded"], unacked)
	}
	t.Logf("first answers: %v", counts)
}

// failoverStoreOpts are the options of the failover tests' stores: none,
// the default wiring. (Set to redisstore.WithReplicaAcks(0, 0) to see them
// fail as main did.)
var failoverStoreOpts []redisstore.Option

// startSentinels starts three Sentinels monitoring master as "idem"
// (quorum 2, down after downAfter) and waits until each knows the other
// two and the replica.
func startSentinels(t *testing.T, master *redisproc.Server, downAfter time.Duration) []string {
	t.Helper()
	conf := fmt.Sprintf("sentinel monitor idem 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds idem %d\n"+
		"sentinel failover-timeout idem 5000\n", master.Port(), downAfter.Milliseconds())
	var addrs []string
	for range 3 {
		addrs = append(addrs, faultServerWith(t, redisproc.Options{Sentinel: conf}).Addr())
	}
	for _, addr := range addrs {
		rdb := redis.NewSentinelClient(&redis.Options{Addr: addr})
		faultEventually(t, 30*time.Second, "Sentinel "+addr+" to know 2 others and the replica", func() bool {
			m, err := rdb.Master(context.Background(), "idem").Result()
			return err == nil && m["num-other-sentinels"] == "2" && m["num-slaves"] == "1"
		})
		_ = rdb.Close()
	}
	return addrs
}

// TestFailoverSentinel stalls the replication link of a master watched by
// three Sentinels, kills the master under load while the replica lags, through go-redis's FailoverClient and the store's
// default wiring, and lets Sentinel promote the replica, then brings the
// old master back as the new one's replica. Every key whose answer was a
// plain 2xx replays that answer afterwards and does not run again; the keys that ran twice meanwhile (a duplicate that started while
// the failover lost an in-progress record) are counted.
func TestFailoverSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master, a replica and three Sentinels")
	}
	pair := startReplicaPair(t)
	master, replica := pair.master, pair.replica
	sentinels := startSentinels(t, master, 500*time.Millisecond)

	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            "idem",
		SentinelAddrs:         sentinels,
		DialTimeout:           250 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		PoolSize:              32,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	runs := newFaultRuns()
	op := faultOp
	op.Lock = 5 * time.Second // longer than the promotion; a lease orphaned by it lapses soon
	eng := idem.NewEngine(redisstore.New(rdb, failoverStoreOpts...), idem.WithStoreTimeout(time.Second))
	// Each run takes 10ms, as a handler that does some work does, so that
	// runs are in progress when the master dies; a run that starts while
	// another of its key runs is a duplicate the failover let in.
	var mu sync.Mutex // guards running
	running := map[string]int{}
	var overlapping atomic.Int64
	work := func(key string, _ int64) {
		mu.Lock()
		if running[key] > 0 {
			overlapping.Add(1)
		}
		running[key]++
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // the handler's work
		mu.Lock()
		running[key]--
		mu.Unlock()
	}
	load := startFailoverLoad(t, eng.Middleware(op)(faultHandler(runs, work)), runs, 16)

	faultEventually(t, 30*time.Second, "200 plain answers before the kill", func() bool { return load.plain.Load() >= 200 })
	// The replication link stalls while the master answers 100 more, then
	// the master dies and the link drops what it held: the replica never
	// gets those completions.
	pair.link.Freeze()
	lagged := load.ok.Load()
	faultEventually(t, 30*time.Second, "100 answers while the replica lags", func() bool { return load.ok.Load() >= lagged+100 })
	master.Kill()
	pair.link.Close()
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sentinel.Close()
	faultEventually(t, 30*time.Second, "Sentinel to promote the replica", func() bool {
		addr, err := sentinel.GetMasterAddrByName(context.Background(), "idem").Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port())
	})
	// The promoted replica has had a replica (the old master, which
	// Sentinel now lists as its replica): its answers are degraded until
	// one acknowledges. The old master comes back, empty, and Sentinel
	// makes it a replica of the new one.
	if err := master.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, replica.Addr(), 1)
	after := load.plain.Load()
	faultEventually(t, 30*time.Second, "200 more plain answers once the old master is a replica", func() bool { return load.plain.Load() >= after+200 })

	ranTwice, undegraded, kinds := load.check(t)
	t.Logf("answers: %v; keys run twice: %d of %d, never answered degraded: %d; runs that started beside another of their key: %d",
		kinds, ranTwice, len(runs.snapshot()), undegraded, overlapping.Load())
}

// TestFailoverCluster fails a master of a private three-master Cluster
// with a replica each over to its replica (CLUSTER FAILOVER on the replica)
// under load, through a ClusterClient and the store's default wiring: the
// completions wait for the slot master's replica (WAIT runs on the masters,
// the old one's and the promoted one's), and every key answered a plain
// 2xx replays that answer afterwards and does not run again.
func TestFailoverCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	ctx := context.Background()
	cluster := startReplicatedCluster(t)
	rdb := faultClusterClient(t, cluster)
	runs := newFaultRuns()
	op := faultOp
	op.Lock = 5 * time.Second // a lease orphaned by the failover lapses soon
	eng := idem.NewEngine(redisstore.New(rdb, failoverStoreOpts...), idem.WithStoreTimeout(time.Second))
	load := startFailoverLoad(t, eng.Middleware(op)(faultHandler(runs, nil)), runs, 8)

	faultEventually(t, 30*time.Second, "200 plain answers before the failover", func() bool { return load.plain.Load() >= 200 })
	promoted := faultClient(t, cluster.Replicas[0].Addr())
	if err := promoted.ClusterFailover(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	faultEventually(t, 30*time.Second, "the replica to become a master", func() bool {
		info, err := promoted.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master") && strings.Contains(info, ",state=online,")
	})
	after := load.plain.Load()
	faultEventually(t, 30*time.Second, "200 more plain answers after the failover", func() bool { return load.plain.Load() >= after+200 })

	ranTwice, undegraded, kinds := load.check(t)
	for _, n := range []*redisproc.Server{cluster.Nodes[0], cluster.Replicas[0]} {
		if calls := redistest.CommandCalls(t, faultClient(t, n.Addr())); calls["wait"] == 0 {
			t.Errorf("no WAIT on %s (commandstats %v): completions on it were not acknowledged", n.Addr(), calls)
		}
	}
	t.Logf("answers: %v; keys run twice: %d of %d, never answered degraded: %d", kinds, ranTwice, len(runs.snapshot()), undegraded)
}

// startReplicatedCluster starts a private Cluster of three masters with a
// replica each, stopped when the test ends.
func startReplicatedCluster(t *testing.T) *redisproc.Cluster {
	t.Helper()
	ctx := context.Background()
	faultServer(t, false) // skips (or fails under CI=true) without redis-server
	cluster, err := redisproc.StartCluster(ctx, 3, time.Second, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	if err := cluster.AddReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	return cluster
}

// faultClusterClient returns a client of cluster with short timeouts,
// closed when the test ends.
func faultClusterClient(t *testing.T, cluster *redisproc.Cluster) *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 cluster.Addrs(),
		DialTimeout:           250 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

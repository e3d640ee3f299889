package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// startReplicated starts a master with opts and a replica of it, both
// stopped when the test ends.
func startReplicated(t *testing.T, opts redisproc.Options) (master, replica *redisproc.Server) {
	t.Helper()
	master = startServer(t, opts)
	replica, err := redisproc.StartReplica(context.Background(), master, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	return master, replica
}

// startServer starts a private redis-server for the test (skipped without
// one, failed under CI=true).
func startServer(t *testing.T, opts redisproc.Options) *redisproc.Server {
	t.Helper()
	return redistest.Server(t, opts)
}

// client returns a client of addr, closed when the test ends.
func client(t *testing.T, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// completeOne acquires key and completes it, returning Complete's error.
func completeOne(t *testing.T, s *Store, key string) error {
	t.Helper()
	ctx := context.Background()
	acq, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: "t-" + key, Fingerprint: "fp", Lease: time.Minute})
	if err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
		t.Fatalf("acquire %s: %+v, %v", key, acq, err)
	}
	return s.Complete(ctx, key, "t-"+key, &idemstore.Record{Status: 201, Body: []byte("{}")}, time.Hour)
}

// TestReplicaAcks: on a master with a replica, every kind of client waits
// for it (WAIT, pipelined on the script's connection), so a completion
// returns nil once the replica has it; with the replication link stalled
// it returns an error matching idemstore.ErrUnreplicated, and the record is
// stored on the master all the same. WithReplicaAcks(0, 0) does not wait,
// and a master without replicas is not waited for.
func TestReplicaAcks(t *testing.T) {
	master := startServer(t, redisproc.Options{})
	link, err := redisproc.StartProxy(master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	replica := startServer(t, redisproc.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(link.Port())}})
	admin := client(t, master.Addr())
	deadline := time.Now().Add(20 * time.Second)
	for info := ""; !strings.Contains(info, ",state=online,"); info, _ = admin.Info(context.Background(), "replication").Result() {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not in sync: %s", replica.Addr(), info)
		}
		time.Sleep(20 * time.Millisecond) // polling a server we do not control
	}

	// A Ring reaches the WAIT through its shard's client (ackNode); a
	// one-address UniversalClient is a Client, so it would test nothing more.
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"shard": master.Addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = ring.Close() })
	clients := map[string]redis.Scripter{"Client": client(t, master.Addr()), "Ring": ring}
	for name, rdb := range clients {
		// The default waits, because the master has a replica; on a loaded
		// test machine the wait may outlast the default timeout, which is
		// an unacknowledged completion, not a failure.
		before := redistest.CommandCalls(t, admin)["wait"]
		if err := completeOne(t, New(rdb, WithPrefix(name)), "default"); err != nil && !errors.Is(err, idemstore.ErrUnreplicated) {
			t.Errorf("%s: complete with a replica in sync: %v", name, err)
		}
		if n := redistest.CommandCalls(t, admin)["wait"]; n != before+1 {
			t.Errorf("%s: %d WAIT for one completion; want 1", name, n-before)
		}
		if err := completeOne(t, New(rdb, WithPrefix(name), WithReplicaAcks(1, 10*time.Second)), "acked"); err != nil {
			t.Errorf("%s: complete with a replica in sync: %v; want it acknowledged", name, err)
		}
	}

	off := New(client(t, master.Addr()), WithPrefix("off"), WithReplicaAcks(0, 0))
	before := redistest.CommandCalls(t, admin)["wait"]
	if err := completeOne(t, off, "k"); err != nil {
		t.Errorf("WithReplicaAcks(0, 0): %v", err)
	}
	if n := redistest.CommandCalls(t, admin)["wait"]; n != before {
		t.Errorf("WithReplicaAcks(0, 0) sent %d WAIT", n-before)
	}

	// NOSCRIPT on the pipelined EVALSHA falls back to EVAL, still waited.
	s := New(client(t, master.Addr()), WithPrefix("flushed"), WithReplicaAcks(1, 10*time.Second))
	if err := completeOne(t, s, "first"); err != nil {
		t.Fatal(err)
	}
	if err := admin.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	before = redistest.CommandCalls(t, admin)["eval"]
	if err := completeOne(t, s, "after-flush"); err != nil {
		t.Errorf("complete after SCRIPT FLUSH: %v", err)
	}
	if n := redistest.CommandCalls(t, admin)["eval"]; n == before {
		t.Errorf("no EVAL after SCRIPT FLUSH")
	}

	link.Freeze()
	var wg sync.WaitGroup
	for name, rdb := range clients {
		wg.Go(func() {
			s := New(rdb, WithPrefix(name), WithReplicaAcks(1, 50*time.Millisecond))
			err := completeOne(t, s, "stalled")
			var se *idemstore.StoreError
			if !errors.Is(err, idemstore.ErrUnreplicated) || errors.As(err, &se) {
				t.Errorf("%s: complete with the link stalled: %v; want ErrUnreplicated, not a store error", name, err)
			}
			acq, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: "stalled", Token: "again", Fingerprint: "fp"})
			if err != nil || acq.Outcome != idemstore.OutcomeReplay {
				t.Errorf("%s: unreplicated completion not stored on the master: %+v, %v", name, acq, err)
			}
		})
	}
	wg.Wait()
	link.Thaw()
}

// TestDurabilityWarning: a master that keeps records in memory only (no
// append-only file, no save rules, no replica) is warned about at each
// check, with what to set, and not refused; one with an append-only file is
// not warned about.
func TestDurabilityWarning(t *testing.T) {
	volatile := startServer(t, redisproc.Options{})
	persistent := startServer(t, redisproc.Options{Persist: true})
	for _, c := range []struct {
		srv  *redisproc.Server
		want bool
	}{{volatile, true}, {persistent, false}} {
		var warnings []string
		s := New(client(t, c.srv.Addr()), WithWarnings(func(_ context.Context, w string) { warnings = append(warnings, w) }))
		if err := s.Check(context.Background()); err != nil {
			t.Errorf("%s: Check: %v; want nil (a warning is not a refusal)", c.srv.Addr(), err)
		}
		switch {
		case !c.want && len(warnings) > 0:
			t.Errorf("%s (append-only file): warned %q", c.srv.Addr(), warnings)
		case c.want && (len(warnings) != 1 || !strings.Contains(warnings[0], "appendonly yes") || !strings.Contains(warnings[0], c.srv.Addr())):
			t.Errorf("%s (in memory only): warnings %q; want one, naming the server and appendonly yes", c.srv.Addr(), warnings)
		}
	}
}

// TestReplicasGoneForGood: a master whose replica's link is down is waited
// for (its completions are unacknowledged) until the operator says the
// replicas are gone on the server: with repl-backlog-ttl shortened the
// master frees its replication backlog, and the store's next check stops
// waiting: completions are plain again, with no WAIT.
func TestReplicasGoneForGood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	ctx := context.Background()
	master, replica := startReplicated(t, redisproc.Options{})
	if err := redisproc.CutLink(ctx, master.Addr(), replica); err != nil {
		t.Fatal(err)
	}
	admin := client(t, master.Addr())
	s := New(client(t, master.Addr()))
	if err := completeOne(t, s, "dropped"); !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("complete with the replica's link down: %v; want ErrUnreplicated", err)
	}
	if err := admin.ConfigSet(ctx, "repl-backlog-ttl", "1").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for info := ""; !strings.Contains(info, "repl_backlog_active:0"); info, _ = admin.Info(ctx, "replication").Result() {
		if time.Now().After(deadline) {
			t.Fatalf("the master kept its backlog: %s", info)
		}
		time.Sleep(50 * time.Millisecond) // polling a server we do not control
	}
	if err := s.Check(ctx); err != nil { // what the store's next check reads
		t.Fatal(err)
	}
	waits := redistest.CommandCalls(t, admin)["wait"]
	if err := completeOne(t, s, "gone"); err != nil {
		t.Errorf("complete once the master freed its backlog: %v; want nil", err)
	}
	if n := redistest.CommandCalls(t, admin)["wait"] - waits; n != 0 {
		t.Errorf("%d WAIT once the master freed its backlog; want none", n)
	}
}

// TestDroppedReplicaSurvivesMasterRestart: a master restarted while its
// replica's link is down keeps no record of that replica (no backlog, no
// replication offset), yet the replica is still the one a failover would
// promote: the store that saw it goes on waiting until a replica
// acknowledges again.
func TestDroppedReplicaSurvivesMasterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	ctx := context.Background()
	master, replica := startReplicated(t, redisproc.Options{Persist: true})
	s := New(client(t, master.Addr()))
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redisproc.CutLink(ctx, master.Addr(), replica); err != nil {
		t.Fatal(err)
	}
	master.Kill()
	if err := master.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := client(t, master.Addr()).Info(ctx, "replication").Result(); !strings.Contains(info, "repl_backlog_active:0") {
		t.Fatalf("the restarted master kept a backlog, the test proves nothing: %s", info)
	}
	if err := s.Check(ctx); err != nil { // what the store's next check reads
		t.Fatal(err)
	}
	if err := completeOne(t, s, "restarted"); !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("complete on the restarted master, its replica's link still down: %v; want ErrUnreplicated", err)
	}
	if err := redisproc.MendLink(ctx, master.Addr(), replica); err != nil {
		t.Fatal(err)
	}
	if err := completeOne(t, New(client(t, master.Addr()), WithReplicaAcks(1, 10*time.Second)), "mended"); err != nil {
		t.Fatalf("complete once the replica is back: %v", err)
	}
	admin := client(t, master.Addr())
	waits := redistest.CommandCalls(t, admin)["wait"]
	if err := completeOne(t, s, "back"); err != nil && !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("complete once the replica is back: %v", err)
	}
	if n := redistest.CommandCalls(t, admin)["wait"] - waits; n == 0 {
		t.Errorf("the store that saw the replica sent no WAIT once it was back; want it still waited for")
	}
}

// TestClusterListedReplicaAtStart: a Cluster master restarted while its
// replica is down keeps no record of that replica in INFO (no backlog, no
// replication offset, none connected), but the Cluster still lists it as
// the master's replica, and it is the one a failover would promote: a
// store started afterwards, which never saw the replica, waits for it and
// answers completions on that master degraded.
func TestClusterListedReplicaAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster with a replica")
	}
	ctx := context.Background()
	startServer(t, redisproc.Options{}).Stop() // skips (or fails under CI=true) without redis-server
	cluster, err := redisproc.StartCluster(ctx, 1, time.Second, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	if err := cluster.AddReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	master := cluster.Nodes[0]
	cluster.Replicas[0].Kill()
	master.Kill()
	if err := master.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitOK(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	admin := client(t, master.Addr())
	if info, _ := admin.Info(ctx, "replication").Result(); !strings.Contains(info, "repl_backlog_active:0") || !strings.Contains(info, "connected_slaves:0") {
		t.Fatalf("the restarted master keeps a record of its replica, the test proves nothing: %s", info)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := completeOne(t, s, "listed"); !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("complete on a master whose listed replica is down, by a store started since: %v; want ErrUnreplicated", err)
	}
}

// TestClusterNoReplicaNoWait: on a Cluster whose masters never had a
// replica (the shared test Cluster), the default store waits for none on
// any master, and every completion is plain.
func TestClusterNoReplicaNoWait(t *testing.T) {
	rdb, prefix := redistest.Cluster(t)
	ctx := context.Background()
	s := New(rdb, WithPrefix(prefix))
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if n := s.want(m.Options().Addr); n != 0 {
			t.Errorf("master %s, which never had a replica: waits for %d; want 0", m.Options().Addr, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 { // keys on every master
		if err := completeOne(t, s, "alone-"+strconv.Itoa(i)); err != nil {
			t.Errorf("complete alone-%d: %v; want nil", i, err)
		}
	}
}

// startSentinel starts a Sentinel that watches master under the name
// "idem" and knows its replicas (replicas of them), and returns its
// address. Its down-after is long: the tests restart the master and must
// not see it fail over.
func startSentinel(t *testing.T, master *redisproc.Server, replicas int) string {
	t.Helper()
	conf := fmt.Sprintf("sentinel monitor idem 127.0.0.1 %d 1\nsentinel down-after-milliseconds idem 60000\n", master.Port())
	addr := startServer(t, redisproc.Options{Sentinel: conf}).Addr()
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = sentinel.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for m, _ := sentinel.Master(context.Background(), "idem").Result(); m["num-slaves"] != strconv.Itoa(replicas); m, _ = sentinel.Master(context.Background(), "idem").Result() {
		if time.Now().After(deadline) {
			t.Fatalf("Sentinel %s does not know the master's %d replica(s): %v", addr, replicas, m)
		}
		time.Sleep(50 * time.Millisecond) // polling a server we do not control
	}
	return addr
}

// awaitSentinel waits until a Sentinel watches the server admin is a
// client of: it subscribes to the server's hello channel.
func awaitSentinel(t *testing.T, admin *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n, _ := admin.PubSubNumSub(context.Background(), sentinelHello).Result(); n[sentinelHello] == 0; n, _ = admin.PubSubNumSub(context.Background(), sentinelHello).Result() {
		if time.Now().After(deadline) {
			t.Fatal("no Sentinel connects to the server")
		}
		time.Sleep(50 * time.Millisecond) // polling a server we do not control
	}
}

// failoverClient returns go-redis's client of the master Sentinel at
// sentinel knows as "idem", closed when the test ends.
func failoverClient(t *testing.T, sentinel string) *redis.Client {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "idem", SentinelAddrs: []string{sentinel}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestSentinelListedReplicaAtStart: a master watched by Sentinel, restarted
// while its replica's link is down, keeps no record of that replica (none
// connected, no backlog), but Sentinel still lists it, and promotes it if
// the master fails: a store started afterwards, through go-redis's
// FailoverClient, which never saw the replica, waits for it and answers
// completions degraded; so does one through a plain client of the master.
// Once Sentinel forgets the replica (SENTINEL RESET,
// the replica still away), a store started then waits for nobody.
func TestSentinelListedReplicaAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master, a replica and a Sentinel")
	}
	ctx := context.Background()
	master, replica := startReplicated(t, redisproc.Options{Persist: true})
	sentinel := startSentinel(t, master, 1)
	if err := redisproc.CutLink(ctx, master.Addr(), replica); err != nil {
		t.Fatal(err)
	}
	master.Kill()
	if err := master.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	admin := client(t, master.Addr())
	if info, _ := admin.Info(ctx, "replication").Result(); !strings.Contains(info, "repl_backlog_active:0") || !strings.Contains(info, "connected_slaves:0") {
		t.Fatalf("the restarted master keeps a record of its replica, the test proves nothing: %s", info)
	}
	// The Sentinel may not have connected to the restarted master yet:
	// the FailoverClient tells the store that one watches it.
	s := New(failoverClient(t, sentinel))
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := completeOne(t, s, "listed"); !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("complete on a master whose replica Sentinel lists, by a store started since: %v; want ErrUnreplicated", err)
	}
	// A plain client of the master learns of the Sentinel from the master.
	awaitSentinel(t, admin)
	plain := New(client(t, master.Addr()), WithPrefix("plain"))
	if err := plain.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := completeOne(t, plain, "listed"); !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("complete through a plain client on a master whose replica Sentinel lists: %v; want ErrUnreplicated", err)
	}

	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	t.Cleanup(func() { _ = sc.Close() })
	if err := sc.Reset(ctx, "idem").Err(); err != nil {
		t.Fatal(err)
	}
	awaitSentinel(t, admin)
	if m, err := sc.Master(ctx, "idem").Result(); err != nil || m["num-slaves"] != "0" {
		t.Fatalf("Sentinel still lists a replica after SENTINEL RESET, the test proves nothing: %v, %v", m, err)
	}
	forgot := New(failoverClient(t, sentinel))
	if err := forgot.Check(ctx); err != nil {
		t.Fatal(err)
	}
	waits := redistest.CommandCalls(t, admin)["wait"]
	if err := completeOne(t, forgot, "forgotten"); err != nil {
		t.Errorf("complete on a master whose replica Sentinel no longer lists: %v; want nil", err)
	}
	if n := redistest.CommandCalls(t, admin)["wait"] - waits; n != 0 {
		t.Errorf("%d WAIT on a master whose replica Sentinel no longer lists; want none", n)
	}
}

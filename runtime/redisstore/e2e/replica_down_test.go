package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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

// Link-down tests: a replica's link to its master goes down, not frozen:
// the replica cannot authenticate any more (a password rotation that
// missed it) and its connection is closed, so the master reports no
// connected replica. That replica is still the one a failover promotes.
// What each test checks is the promise of docs/redis.md: a first answer
// that is a plain 2xx is never undone by the failover.

// linkDownDeployment is a master with one replica, reached through
// clients of one kind (a plain client, Sentinel's, a Cluster's).
type linkDownDeployment struct {
	master  *redisproc.Server // the master whose replica's link goes down
	replica *redisproc.Server
	// client returns a new client of the deployment, as a new process
	// would build.
	client func(t *testing.T) redis.Scripter
	// onMaster reports whether key's record lives on master (a Cluster's
	// other masters keep their replicas).
	onMaster func(t *testing.T, key string) bool
	// failover loses the master and promotes its replica, and returns once
	// clients reach the promoted replica.
	failover func(t *testing.T)
}

// TestLinkDownFailover runs the link-down failover on each kind of
// deployment, through the store's default wiring (redisstore.New):
// answers are plain while the replica is in sync; once its link is down
// (and the store has read the master again, as its next check would) none
// is plain, in the process that ran before and in one started while the
// link is down; once the link is back they are plain again. Then the
// master is lost and the replica promoted, and every key is retried: no
// key first answered a plain 2xx runs again. A store that read the master's
// connected_slaves:0 as "no replica wanted" fails it: every answer while
// the link is down is then a plain 201, and every one runs again.
func TestLinkDownFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts masters, replicas and Sentinels")
	}
	for _, c := range []struct {
		name   string
		deploy func(t *testing.T) linkDownDeployment
	}{
		{"standalone", standaloneLinkDown},
		{"Sentinel", sentinelLinkDown},
		{"Cluster", clusterLinkDown},
	} {
		t.Run(c.name, func(t *testing.T) { linkDownFailover(t, c.deploy(t)) })
	}
}

func linkDownFailover(t *testing.T, d linkDownDeployment) {
	ctx := context.Background()
	runs := newFaultRuns()
	process := func() (http.Handler, *redisstore.Store) {
		s := redisstore.New(d.client(t), failoverStoreOpts...)
		eng := idem.NewEngine(s, idem.WithStoreTimeout(time.Second), idem.WithLogger(nil))
		return eng.Middleware(faultOp)(faultHandler(runs, nil)), s
	}
	h, store := process()
	first := map[string]string{} // key -> firstAnswer
	next := 0
	send := func(h http.Handler, phase string, n int) map[string]int {
		counts := map[string]int{}
		for range n {
			var key string
			for key = ""; key == "" || !d.onMaster(t, key); next++ {
				key = phase + "-" + strconv.Itoa(next)
			}
			a := firstAnswer(faultPost(h, key))
			first[key] = a
			counts[a]++
		}
		t.Logf("%s: %v", phase, counts)
		return counts
	}
	// A replica in sync acknowledges within the default timeout; on a
	// loaded test machine a few may not, and are answered degraded, which
	// is safe. Most must be plain, or the acknowledgement does not work.
	if got := send(h, "healthy", 8); got["plain"] < 4 {
		t.Errorf("first answers while the replica is in sync: %v; want most plain", got)
	}
	cut := func() {
		if err := redisproc.CutLink(ctx, d.master.Addr(), d.replica); err != nil {
			t.Fatal(err)
		}
		if err := store.Check(ctx); err != nil { // what the store's next check reads
			t.Fatal(err)
		}
	}
	cut()
	if got := send(h, "down", 8); got["plain"] > 0 || got["degraded"] == 0 {
		t.Errorf("first answers while the replica's link is down: %v; want every one degraded", got)
	}
	if err := redisproc.MendLink(ctx, d.master.Addr(), d.replica); err != nil {
		t.Fatal(err)
	}
	if got := send(h, "back", 8); got["plain"] < 4 {
		t.Errorf("first answers once the replica is back in sync: %v; want most plain", got)
	}
	cut()
	if got := send(h, "down-again", 4); got["plain"] > 0 {
		t.Errorf("first answers while the replica's link is down again: %v; want every one degraded", got)
	}
	started, _ := process()
	if got := send(started, "new-process", 4); got["plain"] > 0 {
		t.Errorf("first answers of a process started while the replica's link is down: %v; want every one degraded", got)
	}

	d.failover(t)
	reran := 0
	for key, a := range first {
		var w *httptest.ResponseRecorder
		faultEventually(t, 20*time.Second, key+": an answer other than 503 after the failover", func() bool {
			w = faultPost(h, key)
			return w.Code != http.StatusServiceUnavailable
		})
		n := runs.of(key)
		if n > 1 {
			reran++
		}
		switch {
		case w.Code/100 != 2:
			t.Errorf("%s: retry after the failover answered %d %s", key, w.Code, w.Body)
		case a == "plain" && n != 1:
			t.Errorf("%s: first answered a plain 2xx, then ran %d times in all: the failover undid an answered completion", key, n)
		case a == "plain" && w.Header().Get(idemop.HeaderReplayed) != "true":
			t.Errorf("%s: first answered a plain 2xx, retry not replayed", key)
		case a != "plain" && a != "degraded":
			t.Errorf("%s: first answer %s; want plain or degraded", key, a)
		}
	}
	t.Logf("keys %d, run again after the failover %d (each first answered degraded)", len(first), reran)
}

// standaloneLinkDown is a master and its replica, reached through a proxy
// that follows the promotion (REPLICAOF NO ONE), as a virtual IP would.
func standaloneLinkDown(t *testing.T) linkDownDeployment {
	master, replica := startMasterReplica(t)
	front, err := redisproc.StartProxy(master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	return linkDownDeployment{
		master:   master,
		replica:  replica,
		client:   func(t *testing.T) redis.Scripter { return faultClient(t, front.Addr()) },
		onMaster: func(*testing.T, string) bool { return true },
		failover: func(t *testing.T) {
			master.Kill()
			promote(t, replica.Addr())
			front.Retarget(replica.Addr())
		},
	}
}

// sentinelLinkDown is a master and its replica watched by three
// Sentinels, reached through go-redis's FailoverClient; the failover is
// Sentinel's, once the master is killed.
func sentinelLinkDown(t *testing.T) linkDownDeployment {
	ctx := context.Background()
	master, replica := startMasterReplica(t)
	// Sentinel promotes a replica whose link has been down for less than
	// ten times down-after-milliseconds (and the time the master has been
	// down): the scenario's last link-down phase lasts a few seconds.
	sentinels := startSentinels(t, master, 2*time.Second)
	return linkDownDeployment{
		master:  master,
		replica: replica,
		client: func(t *testing.T) redis.Scripter {
			rdb := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:            "idem",
				SentinelAddrs:         sentinels,
				DialTimeout:           250 * time.Millisecond,
				ReadTimeout:           time.Second,
				WriteTimeout:          time.Second,
				ContextTimeoutEnabled: true,
			})
			t.Cleanup(func() { _ = rdb.Close() })
			return rdb
		},
		onMaster: func(*testing.T, string) bool { return true },
		failover: func(t *testing.T) {
			master.Kill()
			sentinel := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
			defer sentinel.Close()
			faultEventually(t, 60*time.Second, "Sentinel to promote the replica", func() bool {
				addr, err := sentinel.GetMasterAddrByName(ctx, "idem").Result()
				return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port())
			})
		},
	}
}

// clusterLinkDown is a Cluster of three masters with a replica each; the
// link that goes down is the first master's, and the failover kills that
// master and promotes its replica (CLUSTER FAILOVER TAKEOVER).
func clusterLinkDown(t *testing.T) linkDownDeployment {
	ctx := context.Background()
	cluster := startReplicatedCluster(t)
	master, replica := cluster.Nodes[0], cluster.Replicas[0]
	var clients []*redis.ClusterClient
	newClient := func(t *testing.T) *redis.ClusterClient {
		rdb := faultClusterClient(t, cluster)
		clients = append(clients, rdb)
		return rdb
	}
	router := newClient(t)
	return linkDownDeployment{
		master:  master,
		replica: replica,
		client:  func(t *testing.T) redis.Scripter { return newClient(t) },
		onMaster: func(t *testing.T, key string) bool {
			n, err := router.MasterForKey(ctx, redisstore.DefaultPrefix+":"+idemstore.RecordKeyIn(faultOp.API, faultOp.ID, "", key))
			if err != nil {
				t.Fatal(err)
			}
			return n.Options().Addr == master.Addr()
		},
		failover: func(t *testing.T) {
			master.Kill()
			promoted := faultClient(t, replica.Addr())
			if err := promoted.Do(ctx, "cluster", "failover", "takeover").Err(); err != nil {
				t.Fatal(err)
			}
			faultEventually(t, 30*time.Second, "the replica to become a master", func() bool {
				info, err := promoted.Info(ctx, "replication").Result()
				return err == nil && strings.Contains(info, "role:master")
			})
			for _, c := range clients {
				c.ReloadState(ctx)
			}
		},
	}
}

// startMasterReplica starts a master and a replica of it, in sync,
// stopped when the test ends.
func startMasterReplica(t *testing.T) (master, replica *redisproc.Server) {
	t.Helper()
	master = faultServerWith(t, redisproc.Options{})
	replica, err := redisproc.StartReplica(context.Background(), master, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	return master, replica
}

// TestNoReplicaNoWait: on a master that never had a replica, the default
// store sends no WAIT, and every first answer is plain; it only asks
// whether a Sentinel watches the master (PUBSUB NUMSUB), and, none
// watching it, does not subscribe to look for one.
func TestNoReplicaNoWait(t *testing.T) {
	srv := faultServer(t, false)
	admin := faultClient(t, srv.Addr())
	runs := newFaultRuns()
	h := idem.NewEngine(redisstore.New(faultClient(t, srv.Addr())), idem.WithLogger(nil)).Middleware(faultOp)(faultHandler(runs, nil))
	before := redistest.CommandCalls(t, admin)
	for i := range 10 {
		if a := firstAnswer(faultPost(h, fmt.Sprintf("alone-%d", i))); a != "plain" {
			t.Errorf("alone-%d: first answer %s on a master that never had a replica; want plain", i, a)
		}
	}
	after := redistest.CommandCalls(t, admin)
	if n := after["wait"] - before["wait"]; n != 0 {
		t.Errorf("%d WAIT on a master that never had a replica; want none", n)
	}
	if n := after["subscribe"] - before["subscribe"]; n != 0 {
		t.Errorf("%d SUBSCRIBE on a master no Sentinel watches; want none", n)
	}
}

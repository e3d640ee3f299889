package previouslayout_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// eventually polls cond every 10 ms until it holds, failing the test with
// what after timeout: for the state of servers the test does not control
// (a replica's link, a promotion).
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond) // polling a server's state
	}
}

// nodeClient is a client of one node, closed when the test ends.
func nodeClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestClusterFailoverDuringRollout: on a private Redis Cluster of two
// masters with a replica each, the migration on (the rollout: every record
// under both keys), for keys whose previous-layout key is on master A and
// whose current key is on master B. With A's replica link cut (the replica
// cannot re-authenticate; A reports no connected replica), a request is
// answered by this version, in a process that ran before the cut or in one
// started after it; then A is killed and its replica promoted
// (CLUSTER FAILOVER TAKEOVER), and the same request is sent to the previous
// version, which reads the previous key alone. A key answered plain 2xx
// never runs again: its previous-layout record was acknowledged by A's
// replica as the store acknowledges completions, or the answer said
// Idempotency-Degraded; with the link cut, every answer does, since A has
// had a replica (a store that counted only connected replicas would see
// none on A in the process started after the cut, and answer plain 201s
// that run again). With the link
// up (the control) every key is answered plain and replayed after the
// failover.
func TestClusterFailoverDuringRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	for _, cut := range []bool{true, false} {
		t.Run(map[bool]string{true: "replica link cut", false: "control"}[cut], func(t *testing.T) {
			clusterFailover(t, cut)
		})
	}
}

func clusterFailover(t *testing.T, cut bool) {
	ctx := context.Background()
	cluster, err := redisproc.StartCluster(ctx, 2, time.Second, redisproc.Options{})
	switch {
	case errors.Is(err, redisproc.ErrNotFound) && os.Getenv("CI") != "true":
		t.Skip("redis-server not installed")
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	if err := cluster.AddReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	newClient := func() *redis.ClusterClient {
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
	rdb := newClient()
	const prefix = "idem"
	op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders", Lock: 5 * time.Second}
	masterOf := func(key string) string {
		t.Helper()
		c, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return c.Options().Addr
	}
	a, b := cluster.Nodes[0].Addr(), cluster.Nodes[1].Addr()
	var keys []string
	for i := 0; len(keys) < 8; i++ {
		k := fmt.Sprintf("k-%d", i)
		prev := prefix + ":" + previouslayout.PreviousRecordKey(op.API, op.ID, "", k)
		cur := prefix + ":" + idemstore.RecordKeyIn(op.API, op.ID, "", k)
		if masterOf(prev) == a && masterOf(cur) == b {
			keys = append(keys, k)
		}
	}

	var mu sync.Mutex
	runs := map[string]int{}
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		runs[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	serve := func(e *idem.Engine, key string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		e.Serve(w, engineReq(http.MethodPost, "/orders", `{"item":"`+key+`"}`, "Idempotency-Key", key), &op, handler)
		return w
	}
	opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)}
	if !cut {
		// The control asserts that nothing is answered degraded: on a
		// loaded machine a healthy replica can take longer than the
		// default acknowledgement timeout, so it gets more of the store
		// timeout (the count is what production's detection finds here).
		opts = append(opts, redisstore.WithReplicaAcks(1, 1500*time.Millisecond))
	}
	cur := idem.NewEngine(previouslayout.New(rdb, 0, opts...),
		idem.WithStoreTimeout(2*time.Second), idem.WithLogger(nil))
	// A deployment that runs: the stores have checked the masters and
	// seen their replicas.
	if w := serve(cur, "k-warm"); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderDegraded) != "" {
		t.Fatalf("warm-up: %d %v", w.Code, w.Header())
	}

	replicaA := nodeClient(t, cluster.Replicas[0].Addr())
	if cut {
		if err := redisproc.CutLink(ctx, a, cluster.Replicas[0]); err != nil {
			t.Fatal(err)
		}
	}
	// Half the keys are served by the process that ran before, half by
	// one started now.
	started := idem.NewEngine(previouslayout.New(newClient(), 0, opts...),
		idem.WithStoreTimeout(2*time.Second), idem.WithLogger(nil))
	plain := map[string]bool{}
	for i, k := range keys {
		e := cur
		if i >= len(keys)/2 {
			e = started
		}
		w := serve(e, k)
		if w.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", k, w.Code, w.Body)
		}
		plain[k] = w.Header().Get(idemop.HeaderDegraded) == ""
	}

	// A is lost; its replica (which may lack the previous-layout records)
	// takes over.
	cluster.Nodes[0].Kill()
	if err := replicaA.Do(ctx, "cluster", "failover", "takeover").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "A's replica to become a master", func() bool {
		info, err := replicaA.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master")
	})
	// The previous version, on a client of its own that learns the new
	// slot map.
	old := idem.NewEngine(previousLayout{redisstore.New(newClient(), previousVersion(prefix)...), op.API, op.ID},
		idem.WithStoreTimeout(2*time.Second), idem.WithLogger(nil))
	eventually(t, 30*time.Second, "the previous key's slot served by the promoted replica", func() bool {
		w := serve(old, "k-probe")
		return w.Code == http.StatusCreated
	})
	reran := 0
	for _, k := range keys {
		w := serve(old, k)
		mu.Lock()
		n := runs[k]
		mu.Unlock()
		if n > 1 {
			reran++
		}
		switch {
		case plain[k] && n != 1:
			t.Errorf("%s: answered plain 201 before the failover, ran %d times on the previous version after it", k, n)
		case plain[k] && w.Header().Get(idemop.HeaderReplayed) != "true":
			t.Errorf("%s: answered plain 201 before the failover; the retry on the previous version: %d %v, want its replay", k, w.Code, w.Header())
		case !cut && !plain[k]:
			t.Errorf("%s: answered degraded with every replica link up", k)
		}
	}
	t.Logf("keys %d, answered plain %d, run again on the previous version %d", len(keys), countTrue(plain), reran)
	if cut && countTrue(plain) > 0 {
		t.Errorf("with A's replica link cut, %d of %d keys were answered plain: their previous-layout records were not acknowledged", countTrue(plain), len(keys))
	}
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// TestClusterMisconfigured runs the production-Redis cases on a private
// three-master cluster (private, because it changes the masters' config and
// ACLs and stops one): one master with an evicting policy, or denying the
// scripts to the store's user, refuses every idempotent request, whichever
// master holds its key, and Check names that master; scripts denied on
// every master for a moment at completion are survived; a hung master costs
// its keys the store timeout.
func TestClusterMisconfigured(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	ctx := context.Background()
	faultServer(t, false) // skips (or fails under CI=true) without redis-server
	cluster, err := redisproc.StartCluster(ctx, 3, time.Second, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	admins := make([]*redis.Client, len(cluster.Nodes))
	for i, n := range cluster.Nodes {
		admins[i] = faultClient(t, n.Addr())
	}
	aclAll := func(rules ...string) {
		for _, a := range admins {
			aclSet(t, a, rules...)
		}
	}
	allow := []string{"reset", "on", ">" + appPass, "~*", "&*", "+@all"}
	aclAll(allow...)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cluster.Addrs(), Username: appUser, Password: appPass, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = rdb.Close() })

	t.Run("evicting policy on one master", func(t *testing.T) {
		odd := cluster.Nodes[2]
		if err := admins[2].ConfigSet(ctx, "maxmemory", "64mb").Err(); err != nil {
			t.Fatal(err)
		}
		if err := admins[2].ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatal(err)
		}
		store := redisstore.New(rdb, redisstore.WithPrefix("cevict"), redisstore.WithCheckInterval(50*time.Millisecond))
		if err := store.Check(ctx); !errors.Is(err, idemstore.ErrStoreMisconfigured) ||
			!strings.Contains(err.Error(), "allkeys-lru on "+odd.Addr()) {
			t.Errorf("Check: %v; want ErrStoreMisconfigured naming allkeys-lru on %s", err, odd.Addr())
		}
		runs := newFaultRuns()
		h := idem.NewEngine(store, idem.WithFailOpen(true)).Middleware(faultOp)(faultHandler(runs, nil))
		wantRefused(t, h, runs, "evict", 12) // keys on every master
		if err := admins[2].ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			t.Fatal(err)
		}
		n := 0
		faultEventually(t, 10*time.Second, "noeviction accepted again", func() bool {
			n++
			return faultPost(h, fmt.Sprintf("after-%d", n)).Code == http.StatusCreated
		})
	})

	t.Run("scripts denied on one master", func(t *testing.T) {
		aclSet(t, admins[1], "-eval", "-evalsha")
		defer aclSet(t, admins[1], "+eval", "+evalsha")
		store := redisstore.New(rdb, redisstore.WithPrefix("cacl"))
		runs := newFaultRuns()
		h := idem.NewEngine(store).Middleware(faultOp)(faultHandler(runs, nil))
		wantRefused(t, h, runs, "acl", 12)
		if err := store.Check(ctx); !errors.Is(err, idemstore.ErrStoreMisconfigured) ||
			!strings.Contains(err.Error(), "NOPERM") || !strings.Contains(err.Error(), cluster.Nodes[1].Addr()) {
			t.Errorf("Check: %v; want ErrStoreMisconfigured with the NOPERM of %s", err, cluster.Nodes[1].Addr())
		}
	})

	t.Run("blip at completion", func(t *testing.T) {
		completionBlip(t, redisstore.New(rdb, redisstore.WithPrefix("cblip")),
			func() { aclAll("-eval", "-evalsha") },
			func() { aclAll("+eval", "+evalsha") })
	})

	t.Run("hung master", func(t *testing.T) {
		const timeout = 300 * time.Millisecond
		store := redisstore.New(rdb, redisstore.WithPrefix("chung"))
		runs := newFaultRuns()
		h := idem.NewEngine(store, idem.WithStoreTimeout(timeout)).Middleware(faultOp)(faultHandler(runs, nil))
		if w := faultPost(h, "warm"); w.Code != http.StatusCreated {
			t.Fatalf("warm-up: %d %s", w.Code, w.Body)
		}
		hung := cluster.Nodes[0]
		if err := hung.Pause(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = hung.Resume() }()
		refused := 0
		for i := range 20 {
			key := fmt.Sprintf("hung-%d", i)
			began := time.Now()
			w := faultPost(h, key)
			took := time.Since(began)
			switch {
			case w.Code == http.StatusServiceUnavailable && faultCode(w) == idemop.CodeStoreUnavailable && runs.of(key) == 0:
				refused++
				if took > timeout+time.Second {
					t.Errorf("%s answered after %v; want about the store timeout %v", key, took, timeout)
				}
			case w.Code != http.StatusCreated:
				t.Errorf("%s: %d %s; want 201 (a live master) or 503 store-unavailable (the hung one)", key, w.Code, w.Body)
			}
		}
		if refused == 0 {
			t.Errorf("no key of 20 met the hung master %s", hung.Addr())
		}
	})
}

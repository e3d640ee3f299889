package redisproc

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// start starts a server for a test, skipping without redis-server (failing
// under CI=true).
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if errors.Is(err, ErrNotFound) && os.Getenv("CI") != "true" {
		t.Skip("redis-server not on PATH")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestKillRestartKeepsPersistedWrites(t *testing.T) {
	ctx := context.Background()
	s := start(t, Options{Persist: true})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("after restart GET k = %q, %v; want v", got, err)
	}
}

func TestCluster(t *testing.T) {
	if _, err := Start(context.Background(), Options{Path: "/nonexistent/redis-server"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing binary: got %v, want ErrNotFound", err)
	}
	start(t, Options{}) // skips without redis-server
	ctx := context.Background()
	c, err := StartCluster(ctx, 3, time.Second, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := rdb.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
}

// TestCutLink: a replica whose link CutLink took down is reported gone by
// its master and cannot come back by itself; MendLink brings it back in
// sync, with the writes made meanwhile.
func TestCutLink(t *testing.T) {
	ctx := context.Background()
	master := start(t, Options{})
	replica, err := StartReplica(ctx, master, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	if err := CutLink(ctx, master.Addr(), replica); err != nil {
		t.Fatal(err)
	}
	m := redis.NewClient(&redis.Options{Addr: master.Addr()})
	defer m.Close()
	if err := m.Set(ctx, "while-down", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer r.Close()
	if info, _ := r.Info(ctx, "replication").Result(); !strings.Contains(info, "master_link_status:down") {
		t.Errorf("replica after CutLink: %s; want its link down", info)
	}
	if err := MendLink(ctx, master.Addr(), replica); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(ctx, 1, 10000).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Get(ctx, "while-down").Result(); err != nil || v != "v" {
		t.Errorf("replica after MendLink: GET while-down = %q, %v; want the write made while the link was down", v, err)
	}
}

package redisproc

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestProxy: commands pass through; frozen, nothing is answered (the
// client's deadline passes); retargeted, the client's next connection
// reaches the other server.
func TestProxy(t *testing.T) {
	a, b := start(t, Options{}), start(t, Options{})
	p, err := StartProxy(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()
	port := func() string {
		t.Helper()
		info, err := rdb.Info(ctx, "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
				return v
			}
		}
		return ""
	}
	if got := port(); got != strconv.Itoa(a.Port()) {
		t.Fatalf("through the proxy: port %s; want %d", got, a.Port())
	}
	p.Freeze()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = rdb.Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("PING answered through a frozen proxy")
	}
	p.Retarget(b.Addr())
	if got := port(); got != strconv.Itoa(b.Port()) {
		t.Fatalf("after Retarget: port %s; want %d", got, b.Port())
	}
}

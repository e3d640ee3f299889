// Package redistest gives tests a Redis to talk to: the real server named by
// REDIS_URL, or an in-process miniredis; its package redisproc starts
// redis-server processes that a test can kill, freeze and restart. It is for
// tests and load harnesses: a service never imports it. Tests sharing one
// real server keep apart by key prefix, never by FLUSHDB, so packages can
// run in parallel.
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Real returns a client of the Redis server at REDIS_URL
// (redis://127.0.0.1:6379/0 form), closed when the test ends. Without
// REDIS_URL it skips the test, or fails it when CI=true, where real Redis is
// mandatory. An unreachable server fails the test.
func Real(t testing.TB) *redis.Client {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDIS_URL not set, and CI=true requires real Redis: run scripts/test.sh")
		}
		t.Skip("REDIS_URL not set: start redis-server or run scripts/test.sh")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("REDIS_URL %s: %v", url, err)
	}
	return rdb
}

// Cluster returns a ClusterClient of the Redis Cluster whose seed addresses
// REDIS_CLUSTER_ADDRS lists (host:port,host:port,...; scripts/test.sh starts
// three masters and sets it) and a key prefix unique to the test, whose keys
// are deleted from every master when the test ends. Without the variable it
// skips the test, or fails it when CI=true.
func Cluster(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	addrs := os.Getenv("REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDIS_CLUSTER_ADDRS not set, and CI=true requires the cluster: run scripts/test.sh")
		}
		t.Skip("REDIS_CLUSTER_ADDRS not set: run scripts/test.sh")
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true})
	ctx := context.Background()
	if err := rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		t.Fatalf("REDIS_CLUSTER_ADDRS %s: %v", addrs, err)
	}
	prefix := Prefix(t)
	t.Cleanup(func() {
		_ = rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				_ = c.Unlink(ctx, iter.Val()).Err()
			}
			return iter.Err()
		})
		_ = rdb.Close()
	})
	return rdb, prefix
}

// Mini starts an in-process miniredis and returns it with a client of it;
// both are closed when the test ends. Its TIME follows the wall clock until
// the test calls SetTime, and keys expire only on FastForward.
func Mini(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return m, rdb
}

// Keyspace returns a client of REDIS_URL (see [Real]) and a key prefix of
// the test's own (see [Prefix]) whose keys are deleted when the test ends.
func Keyspace(t testing.TB) (*redis.Client, string) {
	t.Helper()
	rdb := Real(t)
	prefix := Prefix(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		batch := make([]string, 0, 1000)
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == cap(batch) {
				_ = rdb.Unlink(ctx, batch...).Err()
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			_ = rdb.Unlink(ctx, batch...).Err()
		}
	})
	return rdb, prefix
}

// Prefix returns a key prefix unique to this test run, such as
// "test:TestAcquire/redis:3f2a9c1e", so tests in several packages can share
// one server. It holds no glob metacharacters, so prefix+"*" is a safe
// SCAN pattern.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random prefix: %v", err)
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '/', r == '_', r == '-':
			return r
		}
		return '_'
	}, t.Name())
	return "test:" + name + ":" + hex.EncodeToString(b[:])
}

// CommandCalls returns the server's call count per command from
// INFO commandstats, keyed by lower-case command name ("evalsha", "eval",
// "hset", ...). The counts are server-wide and include every client; compare
// two snapshots, on a server no other test uses at the time, or count on the
// client with [CountCommands]. miniredis does not keep these statistics.
func CommandCalls(t testing.TB, rdb redis.UniversalClient) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	calls, err := parseCommandStats(info)
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	return calls
}

// CPUSeconds returns the server's user+system CPU time so far, in seconds,
// from INFO cpu: compare two snapshots for the CPU a workload cost Redis.
func CPUSeconds(t testing.TB, rdb redis.UniversalClient) float64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatalf("INFO cpu: %v", err)
	}
	cpu, err := parseCPU(info)
	if err != nil {
		t.Fatalf("INFO cpu: %v", err)
	}
	return cpu
}

// parseCPU sums used_cpu_user and used_cpu_sys of INFO cpu.
func parseCPU(info string) (float64, error) {
	var total float64
	found := 0
	for line := range strings.Lines(info) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name != "used_cpu_user" && name != "used_cpu_sys" {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		total += v
		found++
	}
	if found != 2 {
		return 0, errors.New("used_cpu_user or used_cpu_sys missing")
	}
	return total, nil
}

// parseCommandStats parses lines such as
// "cmdstat_evalsha:calls=3,usec=51,usec_per_call=17.00,rejected_calls=0,failed_calls=0".
// Subcommands ("cmdstat_script|flush") keep their "|" form.
func parseCommandStats(info string) (map[string]int64, error) {
	calls := make(map[string]int64)
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, stats, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for field := range strings.SplitSeq(stats, ",") {
			v, ok := strings.CutPrefix(field, "calls=")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, err
			}
			calls[strings.ToLower(strings.TrimPrefix(name, "cmdstat_"))] = n
		}
	}
	return calls, sc.Err()
}

// Counter counts the commands a client sends, per lower-case command name,
// and the round trips they cost (a pipeline is one round trip). Unlike
// [CommandCalls] it sees only its own client, so it is exact under parallel
// tests. It is safe for concurrent use.
type Counter struct {
	mu         sync.Mutex // guards the fields below
	calls      map[string]int64
	roundTrips int64
}

// CountCommands installs a [Counter] on rdb. The commands go-redis sends to
// set up a new connection (HELLO, AUTH, SELECT, READONLY, CLIENT ...) pass
// through the same hooks but are not counted: the pool opens connections
// when it pleases, and they are not the round trips a test measures.
func CountCommands(rdb redis.UniversalClient) *Counter {
	c := &Counter{calls: make(map[string]int64)}
	rdb.AddHook(c)
	return c
}

// Calls returns a snapshot of the command counts.
func (c *Counter) Calls() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// RoundTrips returns the number of round trips counted so far.
func (c *Counter) RoundTrips() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roundTrips
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.calls)
	c.roundTrips = 0
}

func (c *Counter) count(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counted := false
	for _, cmd := range cmds {
		name := strings.ToLower(cmd.Name())
		switch name {
		case "hello", "auth", "select", "readonly", "client":
			continue
		}
		c.calls[name]++
		counted = true
	}
	if counted {
		c.roundTrips++
	}
}

// DialHook implements redis.Hook; dialling is not counted.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook: one command, one round trip.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook: one pipeline, one round trip.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds...)
		return next(ctx, cmds)
	}
}

package idem

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProc is a redis-server process of the test's own, so that it can be
// stopped and started again on the same port, and its INFO commandstats
// count this test's commands only.
type redisProc struct {
	t    *testing.T
	port string
	cmd  *exec.Cmd
}

// startRedisProc starts redis-server on a free port; it is stopped when the
// test ends. Without redis-server the test is skipped (failed when CI=true).
func startRedisProc(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed, and CI=true requires it")
		}
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	p := &redisProc{t: t, port: port}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// addr is the server's address.
func (p *redisProc) addr() string { return "127.0.0.1:" + p.port }

// client returns a client of the server, closed when the test ends.
func (p *redisProc) client() *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr()})
	p.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// start runs the server and waits until it answers PING.
func (p *redisProc) start() {
	p.t.Helper()
	p.cmd = exec.Command("redis-server", "--port", p.port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start redis-server: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("redis-server on %s did not come up: %v", p.port, err)
		}
		// Waiting for another process to listen: there is no event to wait on.
		waitFor(context.Background(), 20*time.Millisecond)
	}
}

// stop kills the server and waits for it to exit.
func (p *redisProc) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

package e2e_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// redisProc is a redis-server process of the test's own, so that it can be
// stopped and started again on the same port, and its INFO commandstats
// count this test's commands only.
type redisProc struct {
	t *testing.T
	s *redisproc.Server
}

// startRedisProc starts redis-server on a free port; it is stopped when the
// test ends. Without redis-server the test is skipped (failed when CI=true).
func startRedisProc(t *testing.T) *redisProc {
	t.Helper()
	return &redisProc{t: t, s: redistest.Server(t, redisproc.Options{})}
}

// client returns a client of the server, closed when the test ends.
func (p *redisProc) client() *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.s.Addr(), ContextTimeoutEnabled: true})
	p.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// start runs the stopped server again on its port and waits until it
// answers PING.
func (p *redisProc) start() {
	p.t.Helper()
	if err := p.s.Restart(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

// stop kills the server and waits for it to exit.
func (p *redisProc) stop() { p.s.Kill() }

// Package embedredis runs miniredis in process as idemgen's embedded Redis:
// the examples' default store, which needs no server to install.
//
// miniredis keeps a key's TTL as a duration that only FastForward counts
// down, so on its own no key ever expires: completed records would pile up
// and an abandoned lease (its TTL is the lease plus the abandoned TTL, see
// lua/lua.go) would never run out. A Server counts its keys' TTLs down with
// the wall clock instead, every [Tick].
package embedredis

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Tick is how often a Server's TTLs are counted down, and so how late a key
// may expire. Each tick visits every key, so it is not much shorter.
const Tick = 50 * time.Millisecond

// Server is a running miniredis whose keys expire with the wall clock.
type Server struct {
	*miniredis.Miniredis

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Start starts a miniredis on a free loopback port.
func Start() (*Server, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	s := &Server{Miniredis: m, stop: make(chan struct{}), done: make(chan struct{})}
	go s.clock()
	return s, nil
}

// clock counts the TTLs down by the time passed since the last tick.
func (s *Server) clock() {
	defer close(s.done)
	t := time.NewTicker(Tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			now := time.Now()
			s.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Stop stops the clock and the server for good. (miniredis's own Close
// stops only the server, which Restart starts again: an outage.)
func (s *Server) Stop() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
	})
	s.Miniredis.Close()
}

// Client returns a go-redis client of s, built as the Redis store requires
// (ContextTimeoutEnabled). Closing it is the caller's.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
}

// StartTB starts a Server and a client of it for a test or benchmark, and
// stops both when it ends.
func StartTB(tb testing.TB) (*Server, *redis.Client) {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatalf("embedded redis: %v", err)
	}
	rdb := s.Client()
	tb.Cleanup(func() {
		_ = rdb.Close()
		s.Stop()
	})
	return s, rdb
}

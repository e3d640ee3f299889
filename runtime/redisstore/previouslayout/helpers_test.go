package previouslayout_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// engineReq is a request of method to target with a JSON body (none for
// "") and the given header name, value pairs.
func engineReq(method, target, body string, headers ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (a logger's).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// redisProc is a redis-server process of the test's own.
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

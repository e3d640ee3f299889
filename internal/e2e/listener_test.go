package e2e_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// listen serves h on a real loopback listener and returns its URL: fiber
// apps through their own Listener (fasthttp), the others through net/http.
func listen(t *testing.T, h http.Handler) string {
	t.Helper()
	if ln, ok := h.(interface{ listen(net.Listener) func() }); ok {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ln.listen(l))
		return "http://" + l.Addr().String()
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestConcurrentOneKey: 200 concurrent requests with one key, over real
// connections to each server form and real Redis, run the handler exactly
// once; every other request gets 409 or the replay of that run. The store
// timeout is raised: 200 requests wait for go-redis's pooled connections,
// and on a loaded test machine that wait must not become a 503.
func TestConcurrentOneKey(t *testing.T) {
	const n = 200
	// bareServersWith, not serversWith: oneCaller's wrapper would hide the
	// fiber apps' own listener; the requests send the caller's key instead.
	for _, srv := range bareServersWith(append(scoped(), idem.WithStoreTimeout(time.Minute))...) {
		t.Run(srv.name, func(t *testing.T) {
			s := &shop{}
			store := &failingStore{Store: redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))}
			h := srv.handler(s, store)
			if _, ok := h.(interface{ listen(net.Listener) func() }); !ok && strings.HasPrefix(srv.name, "fiber") {
				t.Fatalf("%s has no listener of its own: it would be served through net/http", srv.name)
			}
			url := listen(t, h)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
			t.Cleanup(client.CloseIdleConnections)
			start := make(chan struct{})
			statuses, bodies := make([]int, n), make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					req, _ := http.NewRequest("POST", url+"/orders", strings.NewReader(order1))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", "one-key")
					req.Header.Set("X-API-Key", "sk_e2e_caller")
					<-start
					res, err := client.Do(req)
					if err != nil {
						t.Errorf("request %d: %v", i, err)
						return
					}
					b, _ := io.ReadAll(res.Body)
					_ = res.Body.Close()
					statuses[i], bodies[i] = res.StatusCode, string(b)
				})
			}
			close(start)
			wg.Wait()
			created := 0
			for i, st := range statuses {
				switch st {
				case http.StatusCreated:
					created++
				case http.StatusConflict:
				default:
					t.Errorf("status %d, want 201 or 409; body %s", st, bodies[i])
				}
			}
			if created == 0 {
				t.Errorf("no request got 201")
			}
			wantCount(t, "createOrder (calls)", s.createCalls.Load(), 1)
		})
	}
}

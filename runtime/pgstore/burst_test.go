package pgstore_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writers (a logger's).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBurstMakesProgress: a burst of 20 times the pool's size in concurrent
// first requests (20 keys, 8 requests each, on a pool of 8 connections)
// queues for the pool's connections and completes keys: every request is
// answered 201 (its key's run or its replay), 409 (a duplicate while the
// key's run is open) or 503 with Retry-After, and no key runs twice. With
// the store allowing fewer acquires under way than the burst
// (WithMaxClaiming), the excess is refused at once, 503 with Retry-After,
// not after waiting the store timeout for a connection, and keys still
// complete. The rate at which keys complete is measured by the load
// harness (BENCHMARKS.md).
func TestBurstMakesProgress(t *testing.T) {
	const conns, keys, perKey = 8, 20, 8
	for _, tc := range []struct {
		name string
		opts []pgstore.Option
	}{
		{"default queue", nil},
		{"queue of 16", []pgstore.Option{pgstore.WithMaxClaiming(2 * conns)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := pgtest.Pool(t, conns)
			s, _ := pgtest.Store(t, pool, tc.opts...)
			burst(t, s, pool, keys, perKey)
		})
	}
}

// burst sends keys*perKey concurrent first requests and checks them.
func burst(t *testing.T, s *pgstore.Store, pool *pgxpool.Pool, keys, perKey int) {
	pay := pgPool{pool}.Payments(t)
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	// A store timeout long enough that a slow machine (the race detector
	// on two cores) serves the queue in it: an acquire that waits it out
	// fails the test.
	e := idem.NewEngine(s, idem.WithLogger(logger), idem.WithStoreTimeout(30*time.Second))
	srv := httptest.NewServer(sqlfamilytest.ServePayments(e, sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: keys * perKey}}

	type answer struct {
		key    string
		status int
		retry  string
	}
	answers := make(chan answer, keys*perKey)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range keys * perKey {
		key := fmt.Sprintf("burst-%d", i%keys)
		wg.Go(func() {
			<-start
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"amount":5}`))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Idempotency-Key", key)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_ = resp.Body.Close()
			answers <- answer{key, resp.StatusCode, resp.Header.Get("Retry-After")}
		})
	}
	close(start)
	wg.Wait()
	close(answers)

	statuses := map[int]int{}
	for a := range answers {
		statuses[a.status]++
		switch a.status {
		case http.StatusCreated, http.StatusConflict:
		case http.StatusServiceUnavailable:
			if a.retry == "" {
				t.Errorf("%s: 503 without Retry-After", a.key)
			}
		default:
			t.Errorf("%s: status %d", a.key, a.status)
		}
	}
	ran := 0
	for k := range keys {
		switch n := pgtest.Count(t, pool, pay, "key = $1", fmt.Sprintf("burst-%d", k)); n {
		case 0:
		case 1:
			ran++
		default:
			t.Errorf("burst-%d ran %d times", k, n)
		}
	}
	t.Logf("%d of %d keys ran; statuses %v", ran, keys, statuses)
	if ran == 0 {
		t.Errorf("no key ran in the burst")
	}
	if statuses[http.StatusServiceUnavailable] > 0 && !strings.Contains(logs.String(), "busy") {
		t.Errorf("503s without the store's busy refusal:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "deadline exceeded") {
		t.Errorf("acquires waited the store timeout for a connection:\n%s", logs.String())
	}
}

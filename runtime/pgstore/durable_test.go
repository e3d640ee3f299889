package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestDurableWhateverSynchronousCommit: on a server whose
// synchronous_commit is off (a common tuning: a commit is answered before
// its WAL is flushed), from its start or switched off (ALTER SYSTEM and a
// reload) while the service runs, 40 requests are answered, then the
// server stops at once (pg_ctl stop -m immediate, no checkpoint) and starts
// again. The store sets synchronous_commit on in each of its transactions
// when it reads off there, so every answered run survives: the 40 retries
// replay, none runs again.
func TestDurableWhateverSynchronousCommit(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings []string
		change   func(t *testing.T, pool *pgxpool.Pool) // run once the service has started
	}{
		{"off from the start", []string{"synchronous_commit=off", "wal_writer_delay=10000"}, nil},
		{"switched off while the service runs", []string{"wal_writer_delay=10000"}, switchOff},
	} {
		t.Run(c.name, func(t *testing.T) { testDurable(t, c.settings, c.change) })
	}
}

// switchOff turns the server's synchronous_commit off and reloads its
// configuration, then waits until every connection pool can open says off.
func switchOff(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	pgtest.Exec(t, pool, "ALTER SYSTEM SET synchronous_commit = off")
	pgtest.Exec(t, pool, "SELECT pg_reload_conf()")
	conns := make([]*pgxpool.Conn, pool.Config().MaxConns)
	for i := range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		conns[i] = c
	}
	for _, c := range conns {
		// A session reads the configuration again between statements, once
		// the reload's signal has reached it.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var sc string
			if err := c.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil {
				t.Fatal(err)
			}
			if sc == "off" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a session's synchronous_commit is still %s 10 s after the reload", sc)
			}
		}
	}
}

// testDurable is the scenario on a server started with settings; change,
// if not nil, runs on the service's pool before the requests.
func testDurable(t *testing.T, settings []string, change func(*testing.T, *pgxpool.Pool)) {
	const requests = 40
	srv := pgtest.StartServerWith(t, settings...)
	ctx := context.Background()
	url := srv.URL()
	setup := pgtest.PoolOf(t, url, 2)
	_, records := pgtest.Store(t, setup)
	pay := pgPool{setup}.Payments(t)
	setup.Close()

	var runs atomic.Int64
	serveOn := func() (*httptest.Server, *pgxpool.Pool, func()) {
		pool := pgtest.PoolOf(t, url, 8)
		s := pgstore.New(pool, pgstore.WithTable(records), pgstore.WithPurgeInterval(-1))
		h := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, func(context.Context) { runs.Add(1) })))
		return h, pool, func() { h.Close(); s.Close(); pool.Close() }
	}
	h, pool, stop := serveOn()
	if st, body := sqlfamilytest.Post(t, h.Client(), h.URL, "warm-up"); st != http.StatusCreated {
		t.Fatalf("warm-up: %d %s", st, body)
	}
	if change != nil {
		change(t, pool)
	}
	var sc string
	if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != "off" {
		t.Fatalf("the sessions' synchronous_commit = %q, %v; want off", sc, err)
	}
	answers := map[string]string{}
	for i := range requests {
		key := fmt.Sprintf("order-%d", i)
		st, body := sqlfamilytest.Post(t, h.Client(), h.URL, key)
		if st != http.StatusCreated {
			t.Fatalf("%s: %d %s", key, st, body)
		}
		answers[key] = body
	}
	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	runs.Store(0)
	h, _, stop = serveOn()
	defer stop()
	for key, want := range answers {
		if st, body := sqlfamilytest.Post(t, h.Client(), h.URL, key); st != http.StatusCreated || body != want {
			t.Errorf("%s after the crash: %d %s, want the replay of %s", key, st, body, want)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("%d of %d answered requests ran again after the server's crash, want 0", n, requests)
	}
}

package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// TestDurableOnAnAsynchronousCommitServer: on a server whose
// synchronous_commit is off (a common tuning: a commit is answered before
// its WAL is flushed), 40 requests are answered, then the server stops at
// once (pg_ctl stop -m immediate, no checkpoint) and starts again. The
// store's transactions commit with synchronous_commit on, so every answered
// run survives: the 40 retries replay, none runs again.
func TestDurableOnAnAsynchronousCommitServer(t *testing.T) {
	const requests = 40
	srv := pgtest.StartServerWith(t, "synchronous_commit=off", "wal_writer_delay=10000")
	ctx := context.Background()
	url := srv.URL()
	setup := pgtest.PoolOf(t, url, 2)
	_, records := pgtest.Store(t, setup)
	pay := pgPool{setup}.Payments(t)
	var sc string
	if err := setup.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != "off" {
		t.Fatalf("the server's synchronous_commit = %q, %v; want off", sc, err)
	}
	setup.Close()

	var runs atomic.Int64
	serveOn := func() (*httptest.Server, func()) {
		pool := pgtest.PoolOf(t, url, 8)
		s := pgstore.New(pool, pgstore.WithTable(records), pgstore.WithPurgeInterval(-1))
		h := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, func(context.Context) { runs.Add(1) })))
		return h, func() { h.Close(); s.Close(); pool.Close() }
	}
	h, stop := serveOn()
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
	h, stop = serveOn()
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

package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// nextXid is the server's next transaction id: the number of transactions
// that wrote (and so committed or rolled back with an id of their own) is
// its difference over a stretch with nothing else running.
func nextXid(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var x int64
	if err := pool.QueryRow(context.Background(), `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&x); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestRoundTripsAndCommits counts, with a pgx tracer on the store's pool and
// the transaction ids of a private server (nothing else writes to it), what
// a request costs through the engine: a first request three round trips
// besides the handler's one statement (the read-only SELECT, BEGIN with
// the claim, the completion with COMMIT) and one transaction id, so one
// commit; its replay one round trip, a SELECT, and no transaction id (no
// row lock, no commit to flush).
func TestRoundTripsAndCommits(t *testing.T) {
	srv := pgtest.StartServer(t)
	plain := pgtest.PoolOf(t, srv.URL(), 2)
	pool, counter := pgtest.CountingPoolOf(t, srv.URL(), 1) // one connection: its statements prepared once, by the warm-up
	s, _ := pgtest.Store(t, pool)
	pay := pgPool{plain}.Payments(t)
	h := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
	defer h.Close()
	for _, key := range []string{"warm-1", "warm-1", "warm-2"} {
		if st, body := sqlfamilytest.Post(t, h.Client(), h.URL, key); st != http.StatusCreated {
			t.Fatalf("warm-up: %d %s", st, body)
		}
	}

	counter.Reset()
	x0 := nextXid(t, plain)
	st, body := sqlfamilytest.Post(t, h.Client(), h.URL, "first")
	x1 := nextXid(t, plain)
	first := counter.Statements()
	if st != http.StatusCreated {
		t.Fatalf("first request: %d %s", st, body)
	}
	const handlers = 1 // the handler's INSERT
	if len(first) > 3+handlers {
		t.Errorf("a first request took %d round trips, want at most 3 + the handler's %d:\n%s", len(first), handlers, strings.Join(first, "\n"))
	}
	if x1-x0 != 1 {
		t.Errorf("a first request took %d transaction ids, want 1 (one commit)", x1-x0)
	}
	commits := 0
	for _, rt := range first {
		for _, sql := range strings.Split(rt, "; ") {
			if strings.EqualFold(strings.TrimSpace(sql), "COMMIT") {
				commits++
			}
		}
	}
	if commits != 1 {
		t.Errorf("a first request sent %d COMMITs, want 1", commits)
	}

	counter.Reset()
	st2, body2 := sqlfamilytest.Post(t, h.Client(), h.URL, "first")
	x2 := nextXid(t, plain)
	replay := counter.Statements()
	if st2 != st || body2 != body {
		t.Fatalf("replay: %d %s, want %d %s", st2, body2, st, body)
	}
	if len(replay) != 1 || !strings.HasPrefix(strings.TrimSpace(replay[0]), "SELECT") || strings.Contains(replay[0], "FOR ") {
		t.Errorf("a replay took %d round trips, want one read-only SELECT:\n%s", len(replay), strings.Join(replay, "\n"))
	}
	if x2 != x1 {
		t.Errorf("a replay took %d transaction ids, want none", x2-x1)
	}
	t.Logf("first request: %d round trips (%d the handler's), %d transaction id; replay: %d round trip, %d transaction ids",
		len(first), handlers, x1-x0, len(replay), x2-x1)
}

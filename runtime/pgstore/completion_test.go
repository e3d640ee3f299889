package pgstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestCompletionRefusedByConstraint: a CHECK constraint added to the
// records table under a running store refuses the first completion
// after it. The run is answered 500 store-completion-failed (never a 409,
// never a 201), the log names the constraint, the handler's payment is
// rolled back, and no record is left: the key is free, and the store then
// refuses the key's retries 503 store-misconfigured until the table is
// mended, without running the handler.
func TestCompletionRefusedByConstraint(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	var logs lockedBuffer
	e := idem.NewEngine(s, idem.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	var runs atomic.Int64
	srv := httptest.NewServer(sqlfamilytest.ServePayments(e, sqlfamilytest.PaymentHandler(dialect{}, pay, func(context.Context) { runs.Add(1) })))
	defer srv.Close()
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "before"); st != http.StatusCreated {
		t.Fatalf("before the constraint: %d %s", st, body)
	}
	pgtest.Exec(t, pool, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT no_created CHECK (status <> 201) NOT VALID", dialect{}.Quote(records)))
	st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "after")
	if st != http.StatusInternalServerError || sqlfamilytest.ProblemCode(body) != idemop.CodeStoreCompletionFailed {
		t.Errorf("the completion the constraint refused = %d %s; want 500 %s", st, body, idemop.CodeStoreCompletionFailed)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "no_created") {
		t.Errorf("log %q; want an error naming the constraint", logs.String())
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Errorf("%d payment rows; want 1 (the refused run's rolled back)", n)
	}
	if n := pgtest.Count(t, pool, records, "true"); n != 1 {
		t.Errorf("%d records; want 1 (the first run's; the refused one leaves none)", n)
	}
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "after"); st != http.StatusServiceUnavailable || sqlfamilytest.ProblemCode(body) != idemop.CodeStoreMisconfigured {
		t.Errorf("the retry = %d %s; want 503 %s", st, body, idemop.CodeStoreMisconfigured)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("%d runs; want 2 (before, and the refused one)", n)
	}
}

// TestCompletionAfterDroppedConnection: the run's connection is dropped
// (its backend terminated) after the handler's write and before the
// completion. Nothing committed and nothing holds the key: the run is
// answered 503 store-completion-failed with Retry-After, not 409
// ("still being processed"), and the retry runs at once.
func TestCompletionAfterDroppedConnection(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	var dropped atomic.Bool
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s, idem.WithLogger(nil)), sqlfamilytest.PaymentHandler(dialect{}, pay, func(ctx context.Context) {
		if !dropped.Swap(true) {
			pid := pgstore.Tx(ctx).Conn().PgConn().PID()
			// Waits (up to 10 s) for the backend to be gone.
			pgtest.Exec(t, pool, "SELECT pg_terminate_backend($1, 10000)", pid)
		}
	})))
	defer srv.Close()
	st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
	if st != http.StatusServiceUnavailable || sqlfamilytest.ProblemCode(body) != idemop.CodeStoreCompletionFailed {
		t.Errorf("a run whose connection dropped = %d %s; want 503 %s", st, body, idemop.CodeStoreCompletionFailed)
	}
	if n := pgtest.Count(t, pool, pay, "true") + pgtest.Count(t, pool, records, "true"); n != 0 {
		t.Errorf("%d payment rows and records; want none", n)
	}
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated {
		t.Errorf("the retry = %d %s; want 201", st, body)
	}
}

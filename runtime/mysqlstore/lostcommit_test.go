package mysqlstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
)

// TestLostCommitThatDidNotCommit: the connection is cut with the COMMIT
// unsent (the proxy drops it): the server rolls the transaction back, the
// lookup finds no committed record, and the client gets 503; the retry runs
// once and commits.
func TestLostCommitThatDidNotCommit(t *testing.T) {
	proxied, proxy := sqlfamilytest.ProxiedDB(t, dialect{}, 4, nil)
	s, _ := proxied.Store(t, sqlfamilytest.StoreConfig{})
	pay := proxied.Payments(t)
	var runs atomic.Int64
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			proxy.DropCommit.Store(true)
		}
	})))
	defer srv.Close()

	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "dropped"); st != http.StatusServiceUnavailable {
		t.Fatalf("answer after a COMMIT that never arrived = %d %s, want 503", st, body)
	}
	if n := proxied.Count(t, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows after the dropped COMMIT, want 0", n)
	}
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "dropped"); st != http.StatusCreated || runs.Load() != 2 {
		t.Fatalf("retry = %d %s after %d runs; want 201 from the second run", st, body, runs.Load())
	}
	if n := proxied.Count(t, pay, "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}

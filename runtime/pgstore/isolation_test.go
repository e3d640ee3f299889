package pgstore_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestRunUnderRepeatableRead: on a database whose default isolation is
// REPEATABLE READ a run's transaction still commits its record with the
// handler's write.
func TestRunUnderRepeatableRead(t *testing.T) {
	u := pgtest.URL(t)
	pool := pgtest.PoolOf(t, u+sep(u)+"default_transaction_isolation=repeatable%20read", 0)
	s, _ := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
	defer srv.Close()
	for range 2 {
		if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "rr"); st != http.StatusCreated {
			t.Fatalf("answer %d %s, want 201", st, body)
		}
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// sep is the separator before one more query parameter of url.
func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/internal/pgtest"
	idem "github.com/idemgen/idemgen/runtime"
)

// TestHeartbeatDuringRunUnderRepeatableRead: the heartbeat updates the
// record while the handler's transaction is open; on a database whose
// default isolation is REPEATABLE READ the completion would then fail to
// serialize, so the run's transaction is READ COMMITTED whatever the
// default.
func TestHeartbeatDuringRunUnderRepeatableRead(t *testing.T) {
	u := pgtest.URL(t)
	pool := pgtest.PoolOf(t, u+sep(u)+"default_transaction_isolation=repeatable%20read", 0)
	s, records := pgtest.Store(t, pool)
	pay := payments(t, pool)
	op := *payOp
	op.Lock = 300 * time.Millisecond // a heartbeat every 100 ms
	leaseUntil := func() (ts time.Time) {
		q := "SELECT lease_until FROM " + pgx.Identifier{records}.Sanitize()
		if err := pool.QueryRow(context.Background(), q).Scan(&ts); err != nil {
			t.Error(err)
		}
		return ts
	}
	srv := httptest.NewServer(serve(idem.NewEngine(s), &op, paymentHandler(pay, func(context.Context) {
		first := leaseUntil()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		// Until the heartbeat has extended the lease, at most 100 of them.
		deadline := time.Now().Add(10 * time.Second)
		for !leaseUntil().After(first) {
			if time.Now().After(deadline) {
				t.Error("the heartbeat did not extend the lease within 10 s")
				return
			}
			<-tick.C
		}
	})))
	defer srv.Close()
	if st, body := post(t, srv.Client(), srv.URL, "rr"); st != http.StatusCreated {
		t.Fatalf("answer %d %s, want 201", st, body)
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

package mysqlstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestDurabilityLostWhileRunning: a setting that lets a crash lose
// acknowledged commits, changed while the store runs (SET GLOBAL, after
// Check passed), fails the runs that complete after it, instead of
// answering them done: the completion reads the settings in its own
// statement. The run is answered 5xx, nothing of it is stored (the
// handler's INSERT rolled back, no record), and the next request is
// refused without running (503 store-misconfigured) until the setting is
// set back.
func TestDurabilityLostWhileRunning(t *testing.T) {
	srv := mysqltest.StartServer(t, "--log-bin=binlog", "--server-id=1", "--sync-binlog=1")
	admin := mysqltest.DBOf(t, srv.DSN(), 1)
	for _, c := range []struct{ name, lose, restore string }{
		{"innodb_flush_log_at_trx_commit", "SET GLOBAL innodb_flush_log_at_trx_commit = 0", "SET GLOBAL innodb_flush_log_at_trx_commit = 1"},
		{"sync_binlog", "SET GLOBAL sync_binlog = 0", "SET GLOBAL sync_binlog = 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := mysqltest.DBOf(t, srv.DSN(), 0)
			s, table := mysqltest.Store(t, db)
			pay := mysqlDB{db}.Payments(t)
			var lose atomic.Bool
			lose.Store(true)
			var runs atomic.Int64
			h := sqlfamilytest.PaymentHandler(dialect{}, pay, func(context.Context) {
				runs.Add(1)
				if lose.Load() {
					mysqltest.Exec(t, admin, c.lose) // the operator, while the run is under way
				}
			})
			serve := func(s *mysqlstore.Store) *httptest.Server {
				srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), h))
				t.Cleanup(srv.Close)
				return srv
			}
			srv := serve(s)
			st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
			if st < 500 {
				t.Errorf("the run that completed after %s: %d %s; want a 5xx", c.lose, st, body)
			}
			if n, p := mysqltest.Count(t, db, table, "true"), mysqltest.Count(t, db, pay, "true"); n != 0 || p != 0 {
				t.Errorf("%d records, %d payment rows; want none (rolled back)", n, p)
			}
			if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusServiceUnavailable || sqlfamilytest.ProblemCode(body) != "store-misconfigured" || runs.Load() != 1 {
				t.Errorf("next request: %d %s, %d runs; want 503 store-misconfigured, not run", st, body, runs.Load())
			}
			lose.Store(false)
			mysqltest.Exec(t, admin, c.restore)
			// A store started now (the running one checks again within a
			// second) runs the key once.
			mended := serve(mysqlstore.New(db, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1)))
			if st, body := sqlfamilytest.Post(t, mended.Client(), mended.URL, "k"); st != http.StatusCreated || runs.Load() != 2 || mysqltest.Count(t, db, table, "completed") != 1 {
				t.Fatalf("once mended: %d %s, %d runs, %d records; want 201, 2 runs, one record", st, body, runs.Load(), mysqltest.Count(t, db, table, "completed"))
			}
		})
	}
}

package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestLongKeyRefused: a storage key longer than the key column is refused
// with an error that says so, never truncated into another key.
func TestLongKeyRefused(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db)
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'k'
	}
	_, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: string(long), Token: "token-1", Fingerprint: "fp-1", Lease: time.Second})
	if err == nil || errors.Is(err, idemstore.ErrStoreUnavailable) {
		t.Fatalf("Acquire of a 3000-byte key = %v; want an argument error", err)
	}
	if want := "at most 2048"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// TestDuplicateOfAnOpenClaimIsAnsweredAtOnce: while a run's transaction
// holds the key's claim (its handler waits until the duplicate has its
// answer), a duplicate is answered 409 without waiting for the
// transaction: were it to wait, the run could never end (the sessions'
// innodb_lock_wait_timeout is a day: only the claim's own no-wait ends the
// wait). The run then commits, and the key replays.
func TestDuplicateOfAnOpenClaimIsAnsweredAtOnce(t *testing.T) {
	cfg, err := mysql.ParseDSN(mysqltest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["innodb_lock_wait_timeout"] = "86400"
	db := mysqltest.DBOf(t, cfg.FormatDSN(), 0)
	s, _ := mysqltest.Store(t, db)
	pay := mysqlDB{db}.Payments(t)
	inside, duplicateAnswered := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, func(context.Context) {
		if runs.Add(1) == 1 {
			close(inside)
			<-duplicateAnswered
		}
	})))
	defer srv.Close()
	first := make(chan int, 1)
	go func() { st, _ := sqlfamilytest.Post(t, srv.Client(), srv.URL, "open"); first <- st }()
	<-inside
	st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "open")
	close(duplicateAnswered)
	if st != http.StatusConflict {
		t.Errorf("duplicate of an open claim = %d %s, want 409", st, body)
	}
	if st := <-first; st != http.StatusCreated {
		t.Fatalf("the run = %d, want 201", st)
	}
	if st, _ := sqlfamilytest.Post(t, srv.Client(), srv.URL, "open"); st != http.StatusCreated || runs.Load() != 1 || mysqltest.Count(t, db, pay, "true") != 1 {
		t.Fatalf("after the run: %d, %d runs, %d rows; want the replay of one run", st, runs.Load(), mysqltest.Count(t, db, pay, "true"))
	}
}

// TestCompletionExpiry: a completed record expires a retention after its
// completion, or, when the run completed before its lease's deadline with
// the abandoned TTL equal to the retention (both defaults), a retention
// after that deadline: the completion leaves the expiry its claim wrote,
// so that the expires_at index changes once per first request. A record
// of another retention, or whose lease lapsed, is given its own.
func TestCompletionExpiry(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	ctx := context.Background()
	rec := &idemstore.Record{Status: http.StatusCreated, Body: []byte(`{}`)}
	const lease = 10 * time.Second
	// expiry is the key's expiry in seconds from now, by the server's
	// clock, on q (the pool, or a run's transaction).
	expiry := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, key string) float64 {
		t.Helper()
		var us int64
		if err := q.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM `"+table+"` WHERE `key` = ?", key).Scan(&us); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return float64(us) / 1e6
	}
	day := idemstore.DefaultRetention.Seconds()

	acq, run, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "kept", Token: "t1", Fingerprint: "fp", Lease: lease})
	if err != nil || run == nil {
		t.Fatalf("acquire: %+v, %v", acq, err)
	}
	claimed := expiry(mysqlstore.Tx(run.Context(ctx)), "kept")
	if err := run.Commit(ctx, rec, idemstore.DefaultRetention); err != nil {
		t.Fatal(err)
	}
	// The claim's expiry, to the microsecond: now + lease + abandoned TTL
	// when it was read, and less by the time since.
	if got := expiry(db, "kept"); got > claimed || got < day || got > day+lease.Seconds() {
		t.Errorf("kept: expires in %.6f s, claimed %.6f s; want the claim's, within [%v, %v]", got, claimed, day, day+lease.Seconds())
	}

	acq, run, err = s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "hour", Token: "t2", Fingerprint: "fp", Lease: lease})
	if err != nil || run == nil {
		t.Fatalf("acquire: %+v, %v", acq, err)
	}
	if err := run.Commit(ctx, rec, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := expiry(db, "hour"); got > 3600 || got < 3600-lease.Seconds() {
		t.Errorf("hour: expires in %.6f s, want an hour from its completion", got)
	}

	// A lease that lapsed before the completion (the non-transactional
	// path, its deadline moved back by hand): a retention from now.
	if _, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "lapsed", Token: "t3", Fingerprint: "fp", Lease: lease}); err != nil {
		t.Fatal(err)
	}
	mysqltest.Exec(t, db, "UPDATE `"+table+"` SET lease_until = lease_until - INTERVAL 1 HOUR, expires_at = expires_at - INTERVAL 1 HOUR WHERE `key` = 'lapsed'")
	if err := s.Complete(ctx, "lapsed", "t3", rec, idemstore.DefaultRetention); err != nil {
		t.Fatal(err)
	}
	if got := expiry(db, "lapsed"); got > day || got < day-lease.Seconds() {
		t.Errorf("lapsed: expires in %.6f s, want %v from its completion", got, day)
	}
}

// TestRowsOfFindsARowsRows: the keep-alive sees a QueryRow's row as open
// rows until it is scanned, through database/sql's unexported field; should
// that field change, this fails rather than the keep-alive sending under an
// unscanned row.
func TestRowsOfFindsARowsRows(t *testing.T) {
	db := mysqltest.DB(t, 0)
	row := db.QueryRowContext(t.Context(), "SELECT 1")
	rows := mysqlstore.RowsOf(row)
	if rows == nil {
		t.Fatal("no rows behind a QueryRow's row: database/sql's Row changed shape")
	}
	if _, err := rows.Columns(); err != nil {
		t.Fatalf("the row's rows before Scan: %v, want open", err)
	}
	var n int
	if err := row.Scan(&n); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if _, err := rows.Columns(); err == nil {
		t.Fatal("the row's rows are open after Scan")
	}
}

// TestHandlerCannotEndTheRunsTransaction: the handler's Commit and Rollback
// of the run's transaction refuse, saying why; the engine commits the
// handler's INSERT with the stored answer all the same.
func TestHandlerCannotEndTheRunsTransaction(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db)
	pay := mysqlDB{db}.Payments(t)
	h := sqlfamilytest.PaymentHandler(dialect{}, pay, func(ctx context.Context) {
		tx := mysqlstore.Tx(ctx)
		if err := tx.Commit(); err == nil || !strings.Contains(err.Error(), "by the engine") {
			t.Errorf("the handler's Commit = %v, want a refusal", err)
		}
		if err := tx.Rollback(); err == nil {
			t.Error("the handler's Rollback was not refused")
		}
	})
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), h))
	defer srv.Close()
	if st, b := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated {
		t.Fatalf("answered %d %s, want 201", st, b)
	}
	if n := mysqltest.Count(t, db, pay, "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}

// TestTxOutsideARunSaysSo: outside a protected run Tx is nil, and its
// statements answer an error that says why instead of dereferencing nil.
func TestTxOutsideARunSaysSo(t *testing.T) {
	tx := mysqlstore.Tx(context.Background())
	if tx != nil {
		t.Fatalf("Tx outside a run = %v, want nil", tx)
	}
	if _, err := tx.ExecContext(context.Background(), "SELECT 1"); err == nil || !strings.Contains(err.Error(), "no run's transaction") {
		t.Errorf("Exec on Tx outside a run: %v, want the no-run error", err)
	}
	if _, err := tx.Query("SELECT 1"); err == nil || !strings.Contains(err.Error(), "no run's transaction") {
		t.Errorf("Query on Tx outside a run: %v, want the no-run error", err)
	}
	defer func() {
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "no run's transaction") {
			t.Errorf("QueryRow on Tx outside a run panicked with %v, want the no-run error", v)
		}
	}()
	tx.QueryRow("SELECT 1")
}

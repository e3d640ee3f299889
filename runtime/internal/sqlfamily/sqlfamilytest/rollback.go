package sqlfamilytest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// testTxRollsBack: whatever ends a run without a stored result (a status
// that is not stored, a panic, Do's error) rolls the handler's writes back
// and releases the lease, so the retry runs afresh and commits once.
func testTxRollsBack(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, records := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	fails := map[string]struct {
		fail func(w http.ResponseWriter)
		want int // the client's answer (0: none, the connection cut)
	}{
		"status-500": {func(w http.ResponseWriter) { http.Error(w, "downstream failed", http.StatusInternalServerError) }, http.StatusInternalServerError},
		"panic":      {func(http.ResponseWriter) { panic(http.ErrAbortHandler) }, 0},
	}
	for name, c := range fails {
		t.Run(name, func(t *testing.T) {
			var failing atomic.Bool
			failing.Store(true)
			h := func(w http.ResponseWriter, r *http.Request) {
				if _, err := InsertPayment(r.Context(), d, pay); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				if failing.Load() {
					c.fail(w)
					return
				}
				w.WriteHeader(http.StatusCreated)
			}
			srv := httptest.NewServer(ServePayments(idem.NewEngine(s), h))
			defer srv.Close()
			key := "k-" + name
			if st, body := Post(t, srv.Client(), srv.URL, key); st != c.want {
				t.Fatalf("%s = %d %s, want %d", name, st, body, c.want)
			}
			if n := db.Count(t, pay, KeyIs(d), key); n != 0 {
				t.Fatalf("%d payment rows after %s, want 0 (rolled back)", n, name)
			}
			if n := db.Count(t, records, KeyIs(d), idemstore.RecordKey(PayOp().ID, "", key)); n != 0 {
				t.Fatalf("%d records after %s, want 0 (released)", n, name)
			}
			failing.Store(false)
			if st, body := Post(t, srv.Client(), srv.URL, key); st != http.StatusCreated {
				t.Fatalf("retry = %d %s, want 201", st, body)
			}
			if n := db.Count(t, pay, KeyIs(d), key); n != 1 {
				t.Fatalf("%d payment rows after the retry, want 1", n)
			}
		})
	}

	t.Run("Do", func(t *testing.T) { // fn's error rolls back; its success commits with the result
		op := &idemop.Operation{ID: "consume"}
		e := idem.NewEngine(s)
		fail := errors.New("downstream refused")
		_, _, err := e.Do(context.Background(), op, "msg-1", []byte("m"), func(ctx context.Context) ([]byte, error) {
			if _, err := InsertPayment(ctx, d, pay); err != nil {
				return nil, err
			}
			return nil, fail
		})
		if n := db.Count(t, pay, KeyIs(d), "msg-1"); !errors.Is(err, fail) || n != 0 {
			t.Fatalf("Do with an error = %v, rows %d; want the error and no row", err, n)
		}
		for i := range 2 {
			res, replayed, err := e.Do(context.Background(), op, "msg-1", []byte("m"), func(ctx context.Context) ([]byte, error) {
				id, err := InsertPayment(ctx, d, pay)
				return []byte(strconv.FormatInt(id, 10)), err
			})
			if err != nil || replayed != (i == 1) || len(res) == 0 {
				t.Fatalf("Do #%d = %q, %v, %v", i, res, replayed, err)
			}
		}
		if n := db.Count(t, pay, KeyIs(d), "msg-1"); n != 1 {
			t.Fatalf("%d rows after Do and its redelivery, want 1", n)
		}
	})
}

// testTxCancelledRollsBack: a handler that wrote and then returned because
// its context was cancelled leaves nothing behind; one that answered
// although its context ended meanwhile (its client gave up) is committed,
// so that the redelivery replays it.
func testTxCancelledRollsBack(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, records := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	e := idem.NewEngine(s)
	op := &idemop.Operation{ID: "consume"}
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := e.Do(ctx, op, "c1", nil, func(ctx context.Context) ([]byte, error) {
		if _, err := InsertPayment(ctx, d, pay); err != nil {
			return nil, err
		}
		cancel()
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do whose handler returned the cancellation = %v, want context.Canceled", err)
	}
	if n, r := db.Count(t, pay, "true"), db.Count(t, records, "true"); n != 0 || r != 0 {
		t.Fatalf("%d payment rows, %d records; want 0 and 0 (rolled back, released)", n, r)
	}

	ctx, cancel = context.WithCancel(context.Background())
	got, _, err := e.Do(ctx, op, "c2", nil, func(ctx context.Context) ([]byte, error) {
		_, err := InsertPayment(ctx, d, pay)
		cancel() // the caller gives up after the handler's work is done
		return []byte("done"), err
	})
	if err != nil || string(got) != "done" {
		t.Fatalf("Do whose caller gave up after the work = %q, %v; want done", got, err)
	}
	replayed, _, err := e.Do(context.Background(), op, "c2", nil, func(context.Context) ([]byte, error) {
		t.Error("the redelivery ran the handler again")
		return nil, nil
	})
	if n := db.Count(t, pay, "true"); err != nil || string(replayed) != "done" || n != 1 {
		t.Fatalf("the redelivery = %q, %v with %d rows; want the replay of one run", replayed, err, n)
	}
}

// testTxHandlersFailedStatement: the handler's INSERT fails (a duplicate
// id; on PostgreSQL this aborts the transaction) and it answers 422 with a
// problem of its own: that answer is stored and replayed, nothing is
// written.
func testTxHandlersFailedStatement(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	insert := "INSERT INTO " + d.Quote(pay) + " (id, " + d.Quote("key") + ", fence) VALUES "
	db.Exec(t, insert+"(1, 'seed', 0)")
	var runs atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if err := d.TxExec(r.Context(), insert+"(1, 'dup', 1)"); err == nil {
			t.Error("the duplicate id was inserted")
		}
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte("payment 1 exists"))
	}
	srv := httptest.NewServer(ServePayments(idem.NewEngine(s), h))
	defer srv.Close()
	st1, b1 := Post(t, srv.Client(), srv.URL, "k")
	st2, b2 := Post(t, srv.Client(), srv.URL, "k")
	if st1 != http.StatusUnprocessableEntity || b1 != "payment 1 exists" || st2 != st1 || b2 != b1 || runs.Load() != 1 {
		t.Fatalf("answers %d %q, %d %q after %d runs; want the handler's 422 stored and replayed", st1, b1, st2, b2, runs.Load())
	}
	if n := db.Count(t, pay, "true"); n != 1 {
		t.Fatalf("%d rows, want the seed only", n)
	}
}

// testTxCommitsARecordThatExpiredUnderItsLock: the run's transaction holds
// its record's row from the claim to the commit, so no other attempt can
// take the record over meanwhile, even once it has expired (a run longer
// than its lease and the abandoned TTL, simulated here by the handler's own
// UPDATE in the transaction): the commit stores the answer, not
// ErrNotOwner, and the answer is replayed.
func testTxCommitsARecordThatExpiredUnderItsLock(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	ctx := context.Background()
	acq, run, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "k", Token: "t1", Fingerprint: "fp", Lease: time.Minute})
	if err != nil || run == nil {
		t.Fatalf("acquire run = %+v, %v", acq, err)
	}
	if err := d.TxExec(run.Context(ctx), "UPDATE "+d.Quote(table)+" SET expires_at = "+d.Ago()+" WHERE "+KeyIs(d), "k"); err != nil {
		t.Fatal(err)
	}
	if err := run.Commit(ctx, &idemstore.Record{Status: http.StatusCreated, Body: []byte("done")}, time.Hour); err != nil {
		t.Fatalf("commit of a record that expired under its lock = %v, want nil", err)
	}
	if acq := Acquire(t, s, "k", "t2", "fp"); acq.Outcome != idemstore.OutcomeReplay || string(acq.Record.Body) != "done" {
		t.Fatalf("after the commit: %+v; want the replay of done", acq)
	}
}

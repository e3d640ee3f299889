package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestTxOutsideARun: outside a run's handler there is no transaction.
func TestTxOutsideARun(t *testing.T) {
	if tx := pgstore.Tx(context.Background()); tx != nil {
		t.Fatalf("Tx outside a run = %v, want nil", tx)
	}
}

// TestTxRollsBack: whatever ends a run without a stored result rolls the
// handler's writes back and releases the lease, so the retry runs afresh.
func TestTxRollsBack(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	cases := map[string]http.HandlerFunc{
		"status 500": func(w http.ResponseWriter, r *http.Request) {
			if _, err := sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay); err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusInternalServerError)
		},
		"panic": func(w http.ResponseWriter, r *http.Request) {
			if _, err := sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay); err != nil {
				t.Error(err)
			}
			panic(http.ErrAbortHandler)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), h))
			defer srv.Close()
			key := "k-" + name
			sqlfamilytest.Post(t, srv.Client(), srv.URL, key)
			if n := pgtest.Count(t, pool, pay, "key = $1", key); n != 0 {
				t.Fatalf("%d payment rows after %s, want 0 (rolled back)", n, name)
			}
			if n := pgtest.Count(t, pool, records, "key = $1", idemstore.RecordKey(sqlfamilytest.PayOp().ID, "", key)); n != 0 {
				t.Fatalf("%d records after %s, want 0 (released)", n, name)
			}
		})
	}

	// Do: fn's error rolls back; its success commits with the result.
	op := &idemop.Operation{ID: "consume"}
	e := idem.NewEngine(s)
	fail := errors.New("downstream refused")
	_, _, err := e.Do(context.Background(), op, "msg-1", []byte("m"), func(ctx context.Context) ([]byte, error) {
		if _, err := sqlfamilytest.InsertPayment(ctx, dialect{}, pay); err != nil {
			return nil, err
		}
		return nil, fail
	})
	if !errors.Is(err, fail) || pgtest.Count(t, pool, pay, "key = 'msg-1'") != 0 {
		t.Fatalf("Do with an error = %v, rows %d; want the error and no row", err, pgtest.Count(t, pool, pay, "key = 'msg-1'"))
	}
	for i := range 2 {
		res, replayed, err := e.Do(context.Background(), op, "msg-1", []byte("m"), func(ctx context.Context) ([]byte, error) {
			id, err := sqlfamilytest.InsertPayment(ctx, dialect{}, pay)
			return []byte(strconv.FormatInt(id, 10)), err
		})
		if err != nil || replayed != (i == 1) || len(res) == 0 {
			t.Fatalf("Do #%d = %q, %v, %v", i, res, replayed, err)
		}
	}
	if n := pgtest.Count(t, pool, pay, "key = 'msg-1'"); n != 1 {
		t.Fatalf("%d rows after Do and its redelivery, want 1", n)
	}
}

// TestTxCancelledRollsBack: a handler that wrote and then returned because
// its context was cancelled leaves nothing behind; one that answered
// although its context ended meanwhile (its client gave up) is committed,
// so that the redelivery replays it.
func TestTxCancelledRollsBack(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	e := idem.NewEngine(s)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := e.Do(ctx, &idemop.Operation{ID: "consume"}, "c1", nil, func(ctx context.Context) ([]byte, error) {
		if _, err := sqlfamilytest.InsertPayment(ctx, dialect{}, pay); err != nil {
			return nil, err
		}
		cancel()
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do whose handler returned the cancellation = %v, want context.Canceled", err)
	}
	if n, r := pgtest.Count(t, pool, pay, "true"), pgtest.Count(t, pool, records, "true"); n != 0 || r != 0 {
		t.Fatalf("%d payment rows, %d records; want 0 and 0 (rolled back, released)", n, r)
	}

	ctx, cancel = context.WithCancel(context.Background())
	got, _, err := e.Do(ctx, &idemop.Operation{ID: "consume"}, "c2", nil, func(ctx context.Context) ([]byte, error) {
		_, err := sqlfamilytest.InsertPayment(ctx, dialect{}, pay)
		cancel() // the caller gives up after the handler's work is done
		return []byte("done"), err
	})
	if err != nil || string(got) != "done" {
		t.Fatalf("Do whose caller gave up after the work = %q, %v; want done", got, err)
	}
	replayed, _, err := e.Do(context.Background(), &idemop.Operation{ID: "consume"}, "c2", nil, func(context.Context) ([]byte, error) {
		t.Error("the redelivery ran the handler again")
		return nil, nil
	})
	if err != nil || string(replayed) != "done" || pgtest.Count(t, pool, pay, "true") != 1 {
		t.Fatalf("the redelivery = %q, %v with %d rows; want the replay of one run", replayed, err, pgtest.Count(t, pool, pay, "true"))
	}
}

// TestTxAbortedByTheHandlersFailedStatement: the handler's INSERT fails (a
// duplicate id) and it answers 422 with a problem of its own: that answer is
// stored and replayed, nothing is written.
func TestTxAbortedByTheHandlersFailedStatement(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, _ := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	pgtest.Exec(t, pool, "INSERT INTO "+pay+" (id, key, fence) VALUES (1, 'seed', 0)")
	var runs atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, err := pgstore.Tx(r.Context()).Exec(r.Context(), "INSERT INTO "+pay+" (id, key, fence) VALUES (1, 'dup', 1)")
		if err == nil {
			t.Error("the duplicate id was inserted")
		}
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte("payment 1 exists"))
	}
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s), h))
	defer srv.Close()
	st1, b1 := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
	st2, b2 := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
	if st1 != http.StatusUnprocessableEntity || b1 != "payment 1 exists" || st2 != st1 || b2 != b1 || runs.Load() != 1 {
		t.Fatalf("answers %d %q, %d %q after %d runs; want the handler's 422 stored and replayed", st1, b1, st2, b2, runs.Load())
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Fatalf("%d rows, want the seed only", n)
	}
}

package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

var payOp = &idem.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key", Lock: 10 * time.Second}

// TestTxCommitsWithTheResult: the handler's INSERT and the stored response
// commit together; the replay answers the same and adds no row.
func TestTxCommitsWithTheResult(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, _ := pgtest.Store(t, pool)
	pay := payments(t, pool)
	srv := httptest.NewServer(serve(idem.NewEngine(s), payOp, paymentHandler(pay, nil)))
	defer srv.Close()

	st1, b1 := post(t, srv.Client(), srv.URL, "k1")
	st2, b2 := post(t, srv.Client(), srv.URL, "k1")
	if st1 != http.StatusCreated || st2 != st1 || b2 != b1 {
		t.Fatalf("first %d %s, replay %d %s: want the same 201 twice", st1, b1, st2, b2)
	}
	if n := pgtest.Count(t, pool, pay, "key = 'k1'"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
	if tx := pgstore.Tx(context.Background()); tx != nil {
		t.Fatalf("Tx outside a run = %v, want nil", tx)
	}
}

// TestTxRollsBack: whatever ends a run without a stored result rolls the
// handler's writes back and releases the lease, so the retry runs afresh.
func TestTxRollsBack(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := payments(t, pool)
	cases := map[string]http.HandlerFunc{
		"status 500": func(w http.ResponseWriter, r *http.Request) {
			if _, err := insertPayment(r.Context(), pay); err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusInternalServerError)
		},
		"panic": func(w http.ResponseWriter, r *http.Request) {
			if _, err := insertPayment(r.Context(), pay); err != nil {
				t.Error(err)
			}
			panic(http.ErrAbortHandler)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(serve(idem.NewEngine(s), payOp, h))
			defer srv.Close()
			key := "k-" + name
			post(t, srv.Client(), srv.URL, key)
			if n := pgtest.Count(t, pool, pay, "key = $1", key); n != 0 {
				t.Fatalf("%d payment rows after %s, want 0 (rolled back)", n, name)
			}
			if n := pgtest.Count(t, pool, records, "key = $1", idemstore.RecordKey(payOp.ID, "", key)); n != 0 {
				t.Fatalf("%d records after %s, want 0 (released)", n, name)
			}
		})
	}

	// Do: fn's error rolls back; its success commits with the result.
	op := &idem.Operation{ID: "consume"}
	e := idem.NewEngine(s)
	fail := errors.New("downstream refused")
	_, _, err := e.Do(context.Background(), op, "msg-1", []byte("m"), func(ctx context.Context) ([]byte, error) {
		if _, err := insertPayment(ctx, pay); err != nil {
			return nil, err
		}
		return nil, fail
	})
	if !errors.Is(err, fail) || pgtest.Count(t, pool, pay, "key = 'msg-1'") != 0 {
		t.Fatalf("Do with an error = %v, rows %d; want the error and no row", err, pgtest.Count(t, pool, pay, "key = 'msg-1'"))
	}
	for i := range 2 {
		res, replayed, err := e.Do(context.Background(), op, "msg-1", []byte("m"), func(ctx context.Context) ([]byte, error) {
			id, err := insertPayment(ctx, pay)
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

// TestTxCancelledRollsBack: a request cancelled after the handler wrote but
// before the commit leaves nothing behind.
func TestTxCancelledRollsBack(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := payments(t, pool)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := idem.NewEngine(s).Do(ctx, &idem.Operation{ID: "consume"}, "c1", nil, func(ctx context.Context) ([]byte, error) {
		_, err := insertPayment(ctx, pay)
		cancel()
		return []byte("done"), err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do cancelled before the commit = %v, want context.Canceled", err)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows, want 0", n)
	}
	if n := pgtest.Count(t, pool, records, "true"); n != 0 {
		t.Fatalf("%d records, want 0 (released)", n)
	}
}

// TestConcurrentOneKey: 200 concurrent requests with one key run the
// handler once and write one row; every other request is answered 409 or
// the replay of that run.
func TestConcurrentOneKey(t *testing.T) {
	pool := pgtest.Pool(t, 50)
	s, _ := pgtest.Store(t, pool)
	pay := payments(t, pool)
	var runs atomic.Int64
	h := paymentHandler(pay, func(context.Context) { runs.Add(1) })
	// A long store timeout: 200 acquires share 50 connections on a busy
	// machine. A 503 store-unavailable is still a correct answer (the
	// store did not answer in time, nothing ran for it), and is counted.
	srv := httptest.NewServer(serve(idem.NewEngine(s, idem.WithStoreTimeout(10*time.Second)), payOp, h))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}}

	const n = 200
	var wg sync.WaitGroup
	start := make(chan struct{})
	statuses := make([]int, n)
	bodies := make([]string, n)
	for i := range n {
		wg.Go(func() {
			<-start
			statuses[i], bodies[i] = post(t, client, srv.URL, "one-key")
		})
	}
	close(start)
	wg.Wait()
	created, conflicts, unavailable := 0, 0, 0
	var first string
	for i, st := range statuses {
		switch st {
		case http.StatusCreated:
			if first == "" {
				first = bodies[i]
			} else if bodies[i] != first {
				t.Errorf("201 bodies differ: %s and %s", first, bodies[i])
			}
			created++
		case http.StatusConflict:
			conflicts++
		case http.StatusServiceUnavailable:
			if !strings.Contains(bodies[i], "store-unavailable") {
				t.Errorf("request %d: 503 %s", i, bodies[i])
			}
			unavailable++
		default:
			t.Errorf("request %d: %d %s", i, st, bodies[i])
		}
	}
	if runs.Load() != 1 || pgtest.Count(t, pool, pay, "true") != 1 || created == 0 {
		t.Fatalf("%d handler runs, %d rows, %d created, %d conflicts; want 1 run, 1 row", runs.Load(), pgtest.Count(t, pool, pay, "true"), created, conflicts)
	}
	t.Logf("%d created (the run and its replays), %d conflicts, %d store-unavailable", created, conflicts, unavailable)
}

// TestSlowLiveOwnerKeepsTheKey: a live handler that spends three times its
// lock between its INSERT and its answer (a slow call to another system)
// keeps its claim: the run's keep-alive stops the server from ending its
// transaction as idle (idle_in_transaction_session_timeout is the lock). A
// duplicate meanwhile is answered 409; a retry that waits (Operation.Wait)
// gets the run's answer, replayed; one run, one row.
func TestSlowLiveOwnerKeepsTheKey(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, _ := pgtest.Store(t, pool)
	pay := payments(t, pool)
	inserted := make(chan struct{})
	var runs atomic.Int64
	op := *payOp
	op.Lock = 500 * time.Millisecond
	h := paymentHandler(pay, func(context.Context) {
		runs.Add(1)
		close(inserted)
		time.Sleep(3 * op.Lock) // the scenario: a call to another system slower than the lock
	})
	srv := httptest.NewServer(serve(idem.NewEngine(s), &op, h))
	defer srv.Close()
	waiting := op
	waiting.Wait = 30 * time.Second
	retry := httptest.NewServer(serve(idem.NewEngine(s), &waiting, h))
	defer retry.Close()

	type answer struct {
		status int
		body   string
	}
	first := make(chan answer)
	go func() {
		st, b := post(t, srv.Client(), srv.URL, "k")
		first <- answer{st, b}
	}()
	<-inserted
	if st, b := post(t, srv.Client(), srv.URL, "k"); st != http.StatusConflict {
		t.Fatalf("a duplicate while the owner runs = %d %s, want 409", st, b)
	}
	st, b := post(t, retry.Client(), retry.URL, "k") // waits for the run to end
	got := <-first
	if got.status != http.StatusCreated {
		t.Fatalf("the slow run answered %d %s, want 201", got.status, got.body)
	}
	if st != got.status || b != got.body {
		t.Fatalf("the waiting retry got %d %s, want the run's %d %s replayed", st, b, got.status, got.body)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 || runs.Load() != 1 {
		t.Fatalf("%d payment rows after %d runs, want 1 and 1", n, runs.Load())
	}
}

// TestTxAbortedByTheHandlersFailedStatement: the handler's INSERT fails (a
// duplicate id) and it answers 422 with a problem of its own: that answer is
// stored and replayed, nothing is written.
func TestTxAbortedByTheHandlersFailedStatement(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, _ := pgtest.Store(t, pool)
	pay := payments(t, pool)
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
	srv := httptest.NewServer(serve(idem.NewEngine(s), payOp, h))
	defer srv.Close()
	st1, b1 := post(t, srv.Client(), srv.URL, "k")
	st2, b2 := post(t, srv.Client(), srv.URL, "k")
	if st1 != http.StatusUnprocessableEntity || b1 != "payment 1 exists" || st2 != st1 || b2 != b1 || runs.Load() != 1 {
		t.Fatalf("answers %d %q, %d %q after %d runs; want the handler's 422 stored and replayed", st1, b1, st2, b2, runs.Load())
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Fatalf("%d rows, want the seed only", n)
	}
}

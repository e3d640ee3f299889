package sqlfamilytest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
)

// testTxCommitsWithTheResult: the handler's INSERT and the stored response
// commit together; the replay answers the same and adds no row.
func testTxCommitsWithTheResult(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s), &op, PaymentHandler(d, pay, nil)))
	defer srv.Close()

	st1, b1 := Post(t, srv.Client(), srv.URL, "k1")
	st2, b2 := Post(t, srv.Client(), srv.URL, "k1")
	if st1 != http.StatusCreated || st2 != st1 || b2 != b1 {
		t.Fatalf("first %d %s, replay %d %s: want the same 201 twice", st1, b1, st2, b2)
	}
	if n := db.Count(t, pay, KeyIs(d), "k1"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}

// testConcurrentOneKey: 200 concurrent requests with one key, on a pool of
// 50 connections, run the handler once and write one row; every other
// request is answered 409 (in flight) or the replay of that run.
func testConcurrentOneKey(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 50)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	var runs atomic.Int64
	h := PaymentHandler(d, pay, func(context.Context) { runs.Add(1) })
	// A long store timeout: 200 acquires share 50 connections on a busy
	// machine. A 503 store-unavailable is still a correct answer (the
	// store did not answer in time, nothing ran for it), and is counted.
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s, idem.WithStoreTimeout(10*time.Second)), &op, h))
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
			statuses[i], bodies[i] = Post(t, client, srv.URL, "one-key")
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
	if runs.Load() != 1 || db.Count(t, pay, "true") != 1 || created == 0 {
		t.Fatalf("%d handler runs, %d rows, %d created, %d conflicts; want 1 run, 1 row", runs.Load(), db.Count(t, pay, "true"), created, conflicts)
	}
	t.Logf("%d created (the run and its replays), %d conflicts, %d store-unavailable", created, conflicts, unavailable)
}

// RowsHolder is a [Dialect] whose runs may hold a query's rows open
// while the engine keeps the run alive: the slow-owner scenario runs with
// rows held open across a keep-alive too.
type RowsHolder interface {
	// QueryRows runs query in the transaction ctx carries and returns
	// its rows, open.
	QueryRows(ctx context.Context, query string) (Rows, error)
}

// Rows are a query's rows, as both drivers give them.
type Rows interface {
	Next() bool
	Err() error
}

// count reads rows to their end and counts them.
func count(rows Rows) (int, error) {
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// testSlowLiveOwnerKeepsTheKey: a live handler that spends three times its
// lock between its INSERT and its answer (a slow call to another system)
// keeps its claim: the run's keep-alive stops the server from ending its
// transaction as idle (the store sets the server's idle-in-transaction
// timeout to the lock). A duplicate meanwhile is answered 409; a retry
// that waits (Operation.Wait) gets the run's answer, replayed; one run,
// one row. In rows-open (a [RowsHolder]'s), the handler also holds a
// query's rows open across a keep-alive before it reads them: the
// keep-alive sends nothing then (a command sent under open rows would
// break them), and keeps the run alive once they are read.
func testSlowLiveOwnerKeepsTheKey(t *testing.T, d Dialect) {
	t.Run("idle", func(t *testing.T) { slowLiveOwner(t, d, nil) })
	if rh, ok := d.(RowsHolder); ok {
		t.Run("rows-open", func(t *testing.T) { slowLiveOwner(t, d, rh) })
	}
}

func slowLiveOwner(t *testing.T, d Dialect, rows RowsHolder) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	inserted := make(chan struct{})
	kept := make(chan struct{}, 1) // a keep-alive ended
	var runs atomic.Int64
	op := PayOp()
	op.Lock = time.Second // MariaDB's idle timeout counts whole seconds
	h := PaymentHandler(d, pay, func(ctx context.Context) {
		if runs.Add(1) > 1 {
			t.Error("the handler ran again")
			return
		}
		if rows != nil {
			open, err := rows.QueryRows(ctx, "SELECT id FROM "+d.Quote(pay))
			if err != nil {
				t.Error(err)
				return
			}
			<-kept // a keep-alive came while the rows were open
			if n, err := count(open); err != nil || n != 1 {
				t.Errorf("the rows held across a keep-alive: %d rows, %v", n, err)
			}
		}
		close(inserted)
		time.Sleep(3 * op.Lock) // the scenario: a call to another system slower than the lock
	})
	hooks := idem.Hooks{StoreCall: func(ctx context.Context, ev idem.Event) (context.Context, func(idem.Event)) {
		if ev.Call != "keepalive" {
			return ctx, nil
		}
		return ctx, func(idem.Event) {
			select {
			case kept <- struct{}{}:
			default:
			}
		}
	}}
	srv := httptest.NewServer(Serve(idem.NewEngine(s, idem.WithHooks(hooks)), &op, h))
	defer srv.Close()
	waiting := op
	waiting.Wait = 30 * time.Second
	retry := httptest.NewServer(Serve(idem.NewEngine(s), &waiting, h))
	defer retry.Close()

	first := make(chan [2]any, 1)
	go func() {
		st, b := Post(t, srv.Client(), srv.URL, "k")
		first <- [2]any{st, b}
	}()
	<-inserted
	if st, b := Post(t, srv.Client(), srv.URL, "k"); st != http.StatusConflict {
		t.Fatalf("a duplicate while the owner runs = %d %s, want 409", st, b)
	}
	st, b := Post(t, retry.Client(), retry.URL, "k") // waits for the run to end
	got := <-first
	if got[0] != http.StatusCreated {
		t.Fatalf("the slow run answered %v, want 201", got)
	}
	if st != got[0] || b != got[1] {
		t.Fatalf("the waiting retry got %d %s, want the run's %v replayed", st, b, got)
	}
	if n := db.Count(t, pay, "true"); n != 1 || runs.Load() != 1 {
		t.Fatalf("%d payment rows after %d runs, want 1 and 1", n, runs.Load())
	}
}

// testClientThatLeavesGetsAReplay: the client times out (0.7 s) while the
// handler, after its INSERT, is still running; the handler answers all the
// same, and its answer commits with its INSERT, so that the client's retry
// (which waits while the first run commits) is a replay of that one run
// rather than a second run.
func testClientThatLeavesGetsAReplay(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	var runs atomic.Int64
	h := PaymentHandler(d, pay, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			<-ctx.Done() // the client has given up and closed its connection
		}
	})
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s), &op, h))
	defer srv.Close()
	impatient := &http.Client{Timeout: 700 * time.Millisecond}
	if st, b := Post(t, impatient, srv.URL, "k"); st != 0 {
		t.Fatalf("the impatient client got %d %s, want its own timeout", st, b)
	}
	waiting := op
	waiting.Wait = 30 * time.Second
	retry := httptest.NewServer(Serve(idem.NewEngine(s), &waiting, h))
	defer retry.Close()
	st, b := Post(t, retry.Client(), retry.URL, "k")
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("the retry = %d %s after %d runs; want the replay of one run", st, b, runs.Load())
	}
	if n := db.Count(t, pay, "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}

// testAnotherPayloadInFlight: while a run of this process holds a key's
// claim (its handler waits), a request under that key with another payload
// is answered 422 at once, as it would be once the run has completed; one
// with the same payload 409. The run then commits, and the key replays.
func testAnotherPayloadInFlight(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	inside, answered := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	h := PaymentHandler(d, pay, func(context.Context) {
		if runs.Add(1) == 1 {
			close(inside)
			<-answered
		}
	})
	op := PayOp()
	srv := httptest.NewServer(Serve(idem.NewEngine(s), &op, h))
	defer srv.Close()
	first := make(chan int, 1)
	go func() { st, _ := Post(t, srv.Client(), srv.URL, "k"); first <- st }()
	<-inside
	other, otherBody := postBody(t, srv.Client(), srv.URL, "k", `{"amount":6}`)
	same, sameBody := Post(t, srv.Client(), srv.URL, "k")
	close(answered)
	if other != http.StatusUnprocessableEntity {
		t.Errorf("another payload while the run holds the key = %d %s, want 422", other, otherBody)
	}
	if same != http.StatusConflict {
		t.Errorf("the same payload while the run holds the key = %d %s, want 409", same, sameBody)
	}
	if st := <-first; st != http.StatusCreated {
		t.Fatalf("the run = %d, want 201", st)
	}
	if st, _ := Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated || runs.Load() != 1 || db.Count(t, pay, "true") != 1 {
		t.Fatalf("after the run: %d, %d runs, %d rows; want the replay of one run", st, runs.Load(), db.Count(t, pay, "true"))
	}
}

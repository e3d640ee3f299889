package sqlfamilytest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TxEnd is a handler's statements that end its run's transaction, or
// look as if they did, and what the store makes of them.
type TxEnd struct {
	Name string
	// End sends the statements through the run's transaction ctx
	// carries; pay is the test's payments table (a statement may create
	// a table pay+"_ddl", dropped when the test ends).
	End func(ctx context.Context, pay string) error
	// Refused: the store refuses the statements before they reach the
	// server (End returns an error), so the transaction, and the claim,
	// stay open until the handler returns.
	Refused bool
	// Ends: the transaction ended (the run is answered 500
	// transaction-ended, nothing is stored, the key is free); otherwise
	// the run commits as any other.
	Ends bool
	// Released: the end released the key's claim, so a duplicate on
	// another store (another instance), sent while the handler runs on,
	// runs and completes the key; otherwise it is answered 409.
	Released bool
	// ReleasedHere: the store released the key for its own duplicates too:
	// a duplicate on the same store runs (and completes the key) before
	// the one on another store, which is then a replay; otherwise the
	// store answers its own duplicates 409 while the handler runs.
	ReleasedHere bool
	// LaterRefused: the handler's statements after the end are refused
	// (ErrTxEnded); otherwise they run, as the end left the session.
	LaterRefused bool
	// Payments is the number of payment rows the run leaves, of the two
	// it inserts (one before the end, one after): what the end made of
	// them.
	Payments int
}

// testHandlerEndsTheTransaction: a handler inserts a payment, ends the
// run's transaction through the store's Tx with one of the dialect's
// [TxEnd] statements, waits while duplicates are sent, inserts another and
// answers 201 anyway. A duplicate on the same store is answered 409; one
// on another store (another instance) 409 while the claim holds, and runs
// if the end released it. A run whose transaction ended is answered 500
// transaction-ended, never a 201 for rows that were not committed with
// its answer, and its key is free at once (no record), so the retry, by a
// handler that ends nothing, runs and is stored; the payment rows are what
// the end made of them. A run whose transaction did not end commits as
// any other.
func testHandlerEndsTheTransaction(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	for _, c := range d.TxEnds() {
		t.Run(c.Name, func(t *testing.T) { handlerEnds(t, d, db, c) })
	}
}

func handlerEnds(t *testing.T, d Dialect, db DB, c TxEnd) {
	s, records := db.Store(t, StoreConfig{})
	other := db.NewStore(records) // another instance's store
	defer other.Close()
	pay := db.Payments(t)
	t.Cleanup(func() { db.Exec(t, "DROP TABLE IF EXISTS "+d.Quote(pay+"_ddl")) })
	ended, resume, later := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	var runs atomic.Int64
	ends := func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) > 1 { // a duplicate of a key released here
			PaymentHandler(d, pay, nil)(w, r)
			return
		}
		id, err := InsertPayment(r.Context(), d, pay)
		if err != nil {
			t.Error(err)
		}
		ended <- c.End(r.Context(), pay)
		<-resume
		_, err = InsertPayment(r.Context(), d, pay)
		later <- err
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
	srv := httptest.NewServer(ServePayments(idem.NewEngine(s, idem.WithLogger(nil)), ends))
	defer srv.Close()
	dup := httptest.NewServer(ServePayments(idem.NewEngine(other), PaymentHandler(d, pay, nil)))
	defer dup.Close()

	first := make(chan [2]any, 1)
	go func() {
		st, body := Post(t, srv.Client(), srv.URL, "k")
		first <- [2]any{st, body}
	}()
	if err := <-ended; c.Refused != (err != nil) {
		t.Errorf("the end = %v; want it %s", err, map[bool]string{true: "refused", false: "sent"}[c.Refused])
	}
	status := map[bool]int{false: http.StatusConflict, true: http.StatusCreated}
	if st, body := Post(t, srv.Client(), srv.URL, "k"); st != status[c.ReleasedHere] {
		t.Errorf("a duplicate on the same store = %d %s; want %d", st, body, status[c.ReleasedHere])
	}
	if st, body := Post(t, dup.Client(), dup.URL, "k"); st != status[c.Released] {
		t.Errorf("a duplicate on another store = %d %s; want %d", st, body, status[c.Released])
	}
	close(resume)
	got := <-first
	if err := <-later; c.LaterRefused != errors.Is(err, idemstore.ErrTxEnded) || !c.LaterRefused && err != nil {
		t.Errorf("a statement after the end = %v; want it %s", err, map[bool]string{true: "refused (ErrTxEnded)", false: "run"}[c.LaterRefused])
	}
	wantRows, wantRuns := c.Payments, int64(1)
	if c.Released {
		wantRows++ // the duplicate's run
	}
	if c.ReleasedHere {
		wantRuns++
	}
	if n := db.Count(t, pay, "true"); n != wantRows {
		t.Errorf("%d payment rows; want %d (what the end made of the run's)", n, wantRows)
	}
	if !c.Ends {
		if got[0] != http.StatusCreated {
			t.Fatalf("the run = %d %s; want 201", got[0], got[1])
		}
		if st, body := Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated || body != got[1] || runs.Load() != wantRuns {
			t.Fatalf("the retry = %d %s after %d runs; want the run's answer replayed", st, body, runs.Load())
		}
		return
	}
	if got[0] != http.StatusInternalServerError || ProblemCode(got[1].(string)) != idemop.CodeTransactionEnded {
		t.Fatalf("the run = %d %s; want 500 %s", got[0], got[1], idemop.CodeTransactionEnded)
	}
	if !c.Released {
		if n := db.Count(t, records, "true"); n != 0 {
			t.Errorf("%d records after the run that ended its transaction; want none (the key released)", n)
		}
	}
	srv.Config.Handler = ServePayments(idem.NewEngine(s), PaymentHandler(d, pay, func(context.Context) { runs.Add(1) }))
	st, body := Post(t, srv.Client(), srv.URL, "k")
	if st != http.StatusCreated {
		t.Errorf("the retry, by a handler that ends nothing = %d %s; want 201", st, body)
	}
	if !c.Released { // the retry runs; a released key was completed by the duplicate's run
		wantRows++
		wantRuns++
	}
	if n := db.Count(t, pay, "true"); n != wantRows || runs.Load() != wantRuns {
		t.Errorf("%d payment rows after %d runs and the retry; want %d after %d", n, runs.Load(), wantRows, wantRuns)
	}
	if again, b := Post(t, srv.Client(), srv.URL, "k"); again != st || b != body || runs.Load() != wantRuns {
		t.Errorf("after the retry: %d %s, %d runs; want the retry's answer replayed", again, b, runs.Load())
	}
}

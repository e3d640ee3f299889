package pgstore_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// endingHandler inserts a payment, sends end (COMMIT or ROLLBACK) as SQL
// through the run's transaction, calls between, tries a second payment
// (whose error it reports on after) and answers 201 with the first
// payment's id, as a handler that ignores errors would.
func endingHandler(t *testing.T, pay, end string, between func(), after chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay)
		if err != nil {
			t.Error(err)
		}
		if _, err := pgstore.Tx(r.Context()).Exec(r.Context(), end); err != nil {
			t.Errorf("%s: %v", end, err)
		}
		between()
		_, err = sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay)
		after <- err
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
}

// TestHandlerRollbackAsSQL: a handler that rolls the run's transaction
// back with SQL (Tx(ctx).Exec("ROLLBACK")) and answers 201 gets 500
// transaction-ended, never a 201 for a payment that does not exist; its
// statements after the ROLLBACK are refused (they would commit on their
// own, outside the claim), nothing is stored, and the key is free: the
// retry runs.
func TestHandlerRollbackAsSQL(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := pgPool{pool}.Payments(t)
	after := make(chan error, 1)
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s, idem.WithLogger(nil)), endingHandler(t, pay, "ROLLBACK", func() {}, after)))
	defer srv.Close()
	st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
	if st != http.StatusInternalServerError || sqlfamilytest.ProblemCode(body) != idem.CodeTransactionEnded {
		t.Fatalf("a run whose handler sent ROLLBACK = %d %s; want 500 %s", st, body, idem.CodeTransactionEnded)
	}
	if err := <-after; !errors.Is(err, idemstore.ErrTxEnded) {
		t.Errorf("a statement after the handler's ROLLBACK = %v; want it refused (ErrTxEnded)", err)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 0 {
		t.Errorf("%d payment rows; want 0 (rolled back, and the later one refused)", n)
	}
	if n := pgtest.Count(t, pool, records, "true"); n != 0 {
		t.Errorf("%d records; want 0", n)
	}
	srv.Config.Handler = sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, nil))
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated {
		t.Fatalf("the retry = %d %s; want 201 (the key is free)", st, body)
	}
}

// TestHandlerCommitAsSQL: a handler that commits the run's transaction
// with SQL (Tx(ctx).Exec("COMMIT")) commits its writes up to there and
// ends the claim with them. Until it returns, a duplicate on the same
// store is answered 409; a duplicate on another store (another instance)
// finds the key free and runs, as nothing in the database holds the key
// any more. The handler's statements after the COMMIT are refused, and its
// answer is 500 transaction-ended, with no record stored: the key then
// stands for the other instance's run.
func TestHandlerCommitAsSQL(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	other := pgstore.New(pgtest.Pool(t, 0), pgstore.WithTable(records), pgstore.WithPurgeInterval(-1))
	defer other.Close()
	pay := pgPool{pool}.Payments(t)
	committed, resume := make(chan struct{}), make(chan struct{})
	after := make(chan error, 1)
	srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s, idem.WithLogger(nil)), endingHandler(t, pay, "COMMIT", func() {
		close(committed)
		<-resume
	}, after)))
	defer srv.Close()
	dup := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(other), sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
	defer dup.Close()

	first := make(chan [2]any, 1)
	go func() {
		st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
		first <- [2]any{st, body}
	}()
	<-committed
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusConflict {
		t.Errorf("a duplicate on the same store after the handler's COMMIT = %d %s; want 409", st, body)
	}
	st, dupBody := sqlfamilytest.Post(t, dup.Client(), dup.URL, "k")
	if st != http.StatusCreated {
		t.Errorf("a duplicate on another store after the handler's COMMIT = %d %s; want 201 (the key is free in the database)", st, dupBody)
	}
	close(resume)
	got := <-first
	if got[0] != http.StatusInternalServerError || sqlfamilytest.ProblemCode(got[1].(string)) != idem.CodeTransactionEnded {
		t.Fatalf("the run whose handler sent COMMIT = %d %s; want 500 %s", got[0], got[1], idem.CodeTransactionEnded)
	}
	if err := <-after; !errors.Is(err, idemstore.ErrTxEnded) {
		t.Errorf("a statement after the handler's COMMIT = %v; want it refused (ErrTxEnded)", err)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 2 {
		t.Errorf("%d payment rows; want 2: the handler's, committed by its COMMIT, and the other store's run", n)
	}
	if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated || body != dupBody {
		t.Errorf("a retry = %d %s; want the replay of the other store's run, %s", st, body, dupBody)
	}
}

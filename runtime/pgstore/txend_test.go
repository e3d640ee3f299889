package pgstore_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestHandlerEndsTransactionAsSQL: a handler that sends a statement ending
// the run's transaction through Tx(ctx) (COMMIT, ROLLBACK, ...) and then
// answers 201 anyway. The statement is refused before it is sent, so the
// claim holds: a duplicate, on this store or another (another instance),
// is answered 409 until the handler returns. The handler's later
// statements are refused too, and the run is answered 500
// transaction-ended, nothing of it committed and nothing stored: the key
// is free, and the retry runs. A ROLLBACK the refusal cannot see (behind
// another statement of a multi-statement string) ends the transaction on
// the server: the store sees it in the connection's transaction status and
// answers the same 500, never a 201 for a row that does not exist, but
// the claim ended with it, so another instance's duplicate runs meanwhile.
func TestHandlerEndsTransactionAsSQL(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	for _, c := range []struct {
		name string
		sql  string
		args []any
		sent bool // the end reaches the server
	}{
		{"COMMIT", "COMMIT", nil, false},
		{"ROLLBACK", "rollback", nil, false},
		{"END", " \n\tEnd;", nil, false},
		{"ABORT after a comment", "/* undo */ -- all\nABORT", nil, false},
		{"COMMIT AND CHAIN", "COMMIT AND CHAIN", nil, false},
		{"PREPARE TRANSACTION", "PREPARE TRANSACTION 'p'", nil, false},
		{"ROLLBACK behind another statement", "SELECT 1; ROLLBACK", []any{pgx.QueryExecModeSimpleProtocol}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, records := pgtest.Store(t, pool)
			other := pgstore.New(pgtest.Pool(t, 0), pgstore.WithTable(records), pgstore.WithPurgeInterval(-1))
			defer other.Close()
			pay := pgPool{pool}.Payments(t)
			ended, resume := make(chan error, 1), make(chan struct{})
			later := make(chan error, 1)
			srv := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(s, idem.WithLogger(nil)), func(w http.ResponseWriter, r *http.Request) {
				id, err := sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay)
				if err != nil {
					t.Error(err)
				}
				_, err = pgstore.Tx(r.Context()).Exec(r.Context(), c.sql, c.args...)
				ended <- err
				<-resume
				_, err = sqlfamilytest.InsertPayment(r.Context(), dialect{}, pay)
				later <- err
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, `{"id":%d}`, id)
			}))
			defer srv.Close()
			dup := httptest.NewServer(sqlfamilytest.ServePayments(idem.NewEngine(other), sqlfamilytest.PaymentHandler(dialect{}, pay, nil)))
			defer dup.Close()

			first := make(chan [2]any, 1)
			go func() {
				st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k")
				first <- [2]any{st, body}
			}()
			if err := <-ended; c.sent == (err != nil) {
				t.Errorf("%q = %v; want it %s", c.sql, err, map[bool]string{true: "sent", false: "refused"}[c.sent])
			}
			if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusConflict {
				t.Errorf("a duplicate on the same store = %d %s; want 409", st, body)
			}
			wantDup := map[bool]int{false: http.StatusConflict, true: http.StatusCreated}[c.sent]
			if st, body := sqlfamilytest.Post(t, dup.Client(), dup.URL, "k"); st != wantDup {
				t.Errorf("a duplicate on another store = %d %s; want %d", st, body, wantDup)
			}
			close(resume)
			got := <-first
			if got[0] != http.StatusInternalServerError || sqlfamilytest.ProblemCode(got[1].(string)) != idemop.CodeTransactionEnded {
				t.Fatalf("the run = %d %s; want 500 %s", got[0], got[1], idemop.CodeTransactionEnded)
			}
			if err := <-later; !errors.Is(err, idemstore.ErrTxEnded) {
				t.Errorf("a statement after the end = %v; want it refused (ErrTxEnded)", err)
			}
			wantRows := map[bool]int{false: 0, true: 1}[c.sent] // the other store's run
			if n := pgtest.Count(t, pool, pay, "true"); n != wantRows {
				t.Errorf("%d payment rows; want %d", n, wantRows)
			}
			srv.Config.Handler = sqlfamilytest.ServePayments(idem.NewEngine(s), sqlfamilytest.PaymentHandler(dialect{}, pay, nil))
			if st, body := sqlfamilytest.Post(t, srv.Client(), srv.URL, "k"); st != http.StatusCreated {
				t.Errorf("the retry, by a handler that ends nothing = %d %s; want 201", st, body)
			}
			if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
				t.Errorf("%d payment rows after the retry; want 1", n)
			}
		})
	}
}

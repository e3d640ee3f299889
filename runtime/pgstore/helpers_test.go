package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// payments creates a business table of the test's own (no unique key: a
// second run of a key would add a second row) and returns its name.
func payments(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := pgtest.Name(t) + "_pay"
	pgtest.Exec(t, pool, "CREATE TABLE "+name+" (id bigserial PRIMARY KEY, key text NOT NULL, fence bigint NOT NULL)")
	t.Cleanup(func() { pgtest.Drop(t, pool, name) })
	return name
}

// insertPayment is the handler's business write, in the run's transaction:
// one row for the request's key, answered 201 with the row's id.
func insertPayment(ctx context.Context, table string) (int64, error) {
	tx := pgstore.Tx(ctx)
	if tx == nil {
		return 0, fmt.Errorf("no transaction in the handler's context")
	}
	info, _ := idem.FromContext(ctx)
	var id int64
	err := tx.QueryRow(ctx, "INSERT INTO "+pgx.Identifier{table}.Sanitize()+" (key, fence) VALUES ($1, $2) RETURNING id",
		info.Key, info.Fence).Scan(&id)
	return id, err
}

// paymentHandler inserts a payment and answers 201 with its id; before
// answering it calls between (nil: nothing), the point where a test
// freezes or kills it.
func paymentHandler(table string, between func(ctx context.Context)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := insertPayment(r.Context(), table)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if between != nil {
			between(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
}

// serve is an http.Handler running h under op on engine e.
func serve(e *idem.Engine, op *idem.Operation, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, op, h) })
}

// post sends a POST with key to url and returns the status and body; a
// failed exchange returns status 0 and the error.
func post(t testing.TB, client *http.Client, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

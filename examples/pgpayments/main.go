// Command pgpayments is idemgen's PostgreSQL store at work: a payments
// endpoint whose INSERT commits in the same transaction as its stored
// response. It runs a short narrated demo against DATABASE_URL:
//
//	DATABASE_URL=postgres://user@127.0.0.1:5432/db go run ./examples/pgpayments
//
// It creates the records' table (pgstore.CreateSchema) and a payments table
// of its own, and drops neither: run it again and it goes on counting.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

func main() {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		fmt.Fprintln(os.Stderr, "pgpayments: set DATABASE_URL (postgres://user@host:port/db)")
		os.Exit(2)
	}
	if err := run(context.Background(), url, "", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pgpayments:", err)
		os.Exit(1)
	}
}

// createPayment is the operation, as the generated code declares it for
// openapi.yaml's POST /payments (x-idempotent: true).
var createPayment = &idemop.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key"}

// run runs the demo on the database at url; suffix keeps its tables apart
// (the test gives its own).
func run(ctx context.Context, url, suffix string, out io.Writer) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	h, payments, closeStore, err := newServer(ctx, pool, suffix)
	if err != nil {
		return err
	}
	defer closeStore()
	srv := httptest.NewServer(h)
	defer srv.Close()

	rows := func(key string) int {
		var n int
		_ = pool.QueryRow(ctx, "SELECT count(*) FROM "+payments+" WHERE idem_key = $1", key).Scan(&n)
		return n
	}
	send := func(step, key, amount string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/payments?amount="+amount, strings.NewReader(`{"amount":`+amount+`}`))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintf(out, "%s: %v\n", step, err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(out, "%-38s -> %d %s (replayed: %q); payment rows for %s: %d\n",
			step, resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get("Idempotent-Replayed"), key, rows(key))
	}
	key := "pay-" + fmt.Sprint(os.Getpid())
	send("1. first payment", key, "25")
	send("2. the same request again", key, "25")
	send("3. same key, another amount", key, "30")
	send("4. a payment that fails after INSERT", key+"-13", "13")
	send("5. its retry, still failing", key+"-13", "13")
	return nil
}

// newServer sets up the store (records in idem_records+suffix) and the
// payments table on pool, and returns the server of POST /payments, the
// payments table's name and what closes the store.
func newServer(ctx context.Context, pool *pgxpool.Pool, suffix string) (http.Handler, string, func(), error) {
	store := pgstore.New(pool, pgstore.WithTable("idem_records"+suffix))
	if err := store.CreateSchema(ctx); err != nil {
		store.Close()
		return nil, "", nil, err
	}
	if err := store.Check(ctx); err != nil {
		store.Close()
		return nil, "", nil, err
	}
	payments := "payments" + suffix
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+payments+" (id bigserial PRIMARY KEY, idem_key text NOT NULL, amount int NOT NULL)"); err != nil {
		store.Close()
		return nil, "", nil, err
	}

	// The handler writes through pgstore.Tx: the run's transaction.
	handler := func(w http.ResponseWriter, r *http.Request) {
		info, _ := idem.FromContext(r.Context())
		amount := r.URL.Query().Get("amount")
		var id int64
		err := pgstore.Tx(r.Context()).QueryRow(r.Context(),
			"INSERT INTO "+payments+" (idem_key, amount) VALUES ($1, $2) RETURNING id", info.Key, amount).Scan(&id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if amount == "13" { // unlucky: the payment fails after its INSERT
			http.Error(w, "card declined by the bank's outage", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"payment":%d,"amount":%s}`, id, amount)
	}
	engine := idem.NewEngine(store)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments", func(w http.ResponseWriter, r *http.Request) {
		engine.Serve(w, r, createPayment, handler)
	})
	return mux, payments, store.Close, nil
}

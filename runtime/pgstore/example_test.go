package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// Wiring the store, and a handler whose INSERT commits with its stored
// answer. (Not run: it needs a DATABASE_URL; examples/pgpayments runs it.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	store := pgstore.New(pool)
	defer store.Close()
	if err := store.CreateSchema(ctx); err != nil { // or apply pgstore.Schema with your migrations
		log.Fatal(err)
	}
	if err := store.Check(ctx); err != nil { // says what to change
		log.Fatal(err)
	}
	engine := idem.NewEngine(store)
	op := &idemop.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key"}
	pay := func(w http.ResponseWriter, r *http.Request) {
		var id int64
		err := pgstore.Tx(r.Context()).QueryRow(r.Context(), "INSERT INTO payments (amount) VALUES (5) RETURNING id").Scan(&id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError) // not stored: rolled back, released
			return
		}
		w.WriteHeader(http.StatusCreated) // stored, committed with the INSERT, then answered
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
	http.Handle("POST /payments", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		engine.Serve(w, r, op, pay)
	}))
}

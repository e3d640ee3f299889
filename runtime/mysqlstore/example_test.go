package mysqlstore_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

// Wiring the store, and a handler whose INSERT commits with its stored
// answer. (Not run: it needs a MYSQL_DSN; docs/mysql.md's program, which a
// test builds and runs, does the same through a generated server.)
func Example() {
	ctx := context.Background()
	db, err := mysqlstore.OpenDB(os.Getenv("MYSQL_DSN")) // user:password@tcp(host:3306)/db
	if err != nil {
		log.Fatal(err)
	}
	store := mysqlstore.New(db)
	defer store.Close()
	if err := store.CreateSchema(ctx); err != nil { // or apply mysqlstore.Schema with your migrations
		log.Fatal(err)
	}
	if err := store.Check(ctx); err != nil { // says what to change
		log.Fatal(err)
	}
	engine := idem.NewEngine(store)
	op := &idemop.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key"}
	pay := func(w http.ResponseWriter, r *http.Request) {
		res, err := mysqlstore.Tx(r.Context()).ExecContext(r.Context(), "INSERT INTO payments (amount) VALUES (5)")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError) // not stored: rolled back, the key free
			return
		}
		id, _ := res.LastInsertId()
		w.WriteHeader(http.StatusCreated) // stored, committed with the INSERT and the claim, then answered
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
	http.Handle("POST /payments", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		engine.Serve(w, r, op, pay)
	}))
}

package idem_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// message is what the handler publishes: the key it derived, and a body.
type message struct {
	Key  string
	Body []byte
}

// ExampleDerivedKey carries a request's idempotency past the handler: the
// handler of POST /orders publishes a ledger entry keyed by a key derived
// from its run, and the consumer deduplicates with Do on that key. The
// broker delivers at least once (here: three times); the consumer applies
// the entry once. The handler's first run fails after publishing (503, as
// if it crashed), so the client's retry runs it again: the message it
// publishes then carries the same key, and is not applied again either.
func ExampleDerivedKey() {
	// The reference store, in memory, for the example; a service passes
	// redisstore.New(rdb) or pgstore.New(pool).
	store := memstore.New()

	var broker []message // published, each delivered three times
	runs := 0
	protect := idem.NewEngine(store).Middleware(idemop.Operation{ID: "CreateOrder"})
	orders := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := idem.DerivedKey(r.Context(), "ledger-entry")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		broker = append(broker, message{Key: key, Body: []byte(`{"debit":500}`)})
		if runs++; runs == 1 {
			http.Error(w, "crashed after publishing", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	for range 2 { // the first attempt, and the client's retry with the same key
		r := httptest.NewRequest("POST", "/orders", strings.NewReader(`{"item":"book"}`))
		r.Header.Set("Idempotency-Key", "order-8e03978e")
		w := httptest.NewRecorder()
		orders.ServeHTTP(w, r)
		fmt.Println("POST /orders:", w.Code)
	}

	applied := 0
	apply := &idemop.Operation{ID: "ApplyLedgerEntry"}
	for _, m := range broker {
		for range 3 { // at-least-once: redelivered
			_, replayed, err := idem.Do(context.Background(), store, apply, m.Key, m.Body,
				func(ctx context.Context) ([]byte, error) {
					applied++
					return []byte("applied"), nil
				})
			fmt.Println("delivery: replayed", replayed, err)
		}
	}
	fmt.Println("published:", len(broker), "same key:", broker[0].Key == broker[1].Key, "applied:", applied)
	// Output:
	// POST /orders: 503
	// POST /orders: 201
	// delivery: replayed false <nil>
	// delivery: replayed true <nil>
	// delivery: replayed true <nil>
	// delivery: replayed true <nil>
	// delivery: replayed true <nil>
	// delivery: replayed true <nil>
	// published: 2 same key: true applied: 1
}

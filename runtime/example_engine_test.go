package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// Example_middleware protects a hand-written route: the first request runs
// the handler, a retry with the same key gets the stored answer, and the
// same key with another body is refused.
func Example_middleware() {
	// The reference store, in memory, for the example; a service passes
	// redisstore.New(rdb) or pgstore.New(pool).
	store := memstore.New()

	engine := idem.NewEngine(store)
	protect := engine.Middleware(idemop.Operation{ID: "CreateOrder"})

	orders := 0
	mux := http.NewServeMux()
	mux.Handle("POST /orders", protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		orders++
		info, _ := idem.FromContext(r.Context())
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", orders))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "order %d (fence %d)\n", orders, info.Fence)
	})))

	send := func(body string) {
		r := httptest.NewRequest("POST", "/orders", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d replayed=%q location=%q %s", w.Code, w.Header().Get("Idempotent-Replayed"),
			w.Header().Get("Location"), w.Body)
	}
	send(`{"item":"book","qty":1}`)
	send(`{ "qty": 1, "item": "book" }`) // same JSON, other spelling: a replay
	send(`{"item":"book","qty":2}`)
	fmt.Println("orders placed:", orders)
	// Output:
	// 201 replayed="" location="/orders/1" order 1 (fence 1)
	// 201 replayed="true" location="/orders/1" order 1 (fence 1)
	// 422 replayed="" location="" {"type":"urn:idemgen:problem:fingerprint-mismatch","title":"Unprocessable Entity","status":422,"detail":"this idempotency key was already used for a different request","code":"fingerprint-mismatch"}
	// orders placed: 1
}

// ExampleDo processes an at-least-once delivery: the redelivered message
// gets the stored result instead of charging twice.
func ExampleDo() {
	// The reference store, in memory, for the example; a service passes
	// redisstore.New(rdb) or pgstore.New(pool).
	store := memstore.New()

	op := &idemop.Operation{ID: "ChargeCard"}
	charges := 0
	handle := func(ctx context.Context, msgID string, payload []byte) {
		receipt, replayed, err := idem.Do(ctx, store, op, msgID, payload, func(ctx context.Context) ([]byte, error) {
			charges++
			return fmt.Appendf(nil, "receipt-%d", charges), nil
		})
		switch {
		case errors.Is(err, idem.ErrFingerprintMismatch):
			fmt.Println(msgID, "reused for another payload: dead-letter it")
		case err != nil:
			fmt.Println(msgID, "failed, redeliver later:", err)
		default:
			fmt.Printf("%s %s replayed=%v\n", msgID, receipt, replayed)
		}
	}
	ctx := context.Background()
	handle(ctx, "msg-1", []byte(`{"amount":500}`))
	handle(ctx, "msg-1", []byte(`{"amount":500}`)) // redelivery
	handle(ctx, "msg-1", []byte(`{"amount":900}`))
	fmt.Println("charges:", charges)
	// Output:
	// msg-1 receipt-1 replayed=false
	// msg-1 receipt-1 replayed=true
	// msg-1 reused for another payload: dead-letter it
	// charges: 1
}

// ExampleEngine_ServeStrict is what generated strict-server code does, in
// two steps: ServeBody reads the body in front of the strict handler's
// decoder, and ServeStrict, in the strict middleware, identifies the
// request by those bytes and captures the response object's Visit method.
func ExampleEngine_ServeStrict() {
	// The reference store, in memory, for the example; a service passes
	// redisstore.New(rdb) or pgstore.New(pool).
	store := memstore.New()
	engine := idem.NewEngine(store)
	op := &idemop.Operation{ID: "CreatePet", Method: "POST", Path: "/pets"}

	type newPet struct {
		Name string `json:"name"`
	}
	strictHandler := func(ctx context.Context, body *newPet) (*idem.Response, error) {
		return idemgen.CaptureContext(context.Background(), func(w http.ResponseWriter) error {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, err := fmt.Fprintf(w, `{"name":%q}`, body.Name)
			return err
		})
	}
	for range 2 {
		r := httptest.NewRequest("POST", "/pets", strings.NewReader(`{"name":"rex"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "k-1")
		w := httptest.NewRecorder()
		idemgen.ServeBody(engine, w, r, op, func(w http.ResponseWriter, r *http.Request) {
			var body newPet // the strict handler decodes the restored body
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				panic(err)
			}
			resp, err := engine.ServeStrict(r.Context(), r, op,
				func(ctx context.Context) (*idem.Response, error) { return strictHandler(ctx, &body) })
			if err != nil {
				panic(err)
			}
			_ = resp.Write(w)
		})
		fmt.Println(w.Code, w.Header().Get("Idempotent-Replayed"), w.Body)
	}
	// Output:
	// 201  {"name":"rex"}
	// 201 true {"name":"rex"}
}

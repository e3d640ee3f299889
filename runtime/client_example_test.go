package idem_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// This is what a generated client helper does for one logical call: begin
// it, marshal the body once, then let Run retry the same bytes and key.
func ExampleCaller_Begin() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("server: key %s body %s\n", r.Header.Get("Idempotency-Key"), body)
		if calls.Add(1) <= 2 { // the first two attempts fail
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	op := &idemop.ClientOperation{ID: "CreatePet", KeyHeader: "Idempotency-Key"}
	caller := idem.NewCaller(
		// Skip the real waits in this example; production code keeps the defaults.
		idem.WithClock(nil, func(context.Context, time.Duration) error { return nil }),
		idem.WithAttemptHook(func(a idem.AttemptInfo) {
			fmt.Printf("attempt %d: status %d, retry %v after %v\n", a.Attempt, a.Status, a.Retry, a.Wait)
		}),
	)

	var res idem.CallResult
	call := caller.Begin(op, idem.WithKey("order-42"), idem.WithResult(&res))
	body, _ := idemgen.MarshalBody(call, map[string]string{"name": "Rex"})
	err := call.Run(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/pets", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if err := idemgen.Editor(call)(ctx, req); err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return resp, err
	})
	fmt.Printf("err %v, key %s, attempts %d, status %d\n", err, res.Key, res.Attempts, res.Status)
	// Output:
	// server: key order-42 body {"name":"Rex"}
	// attempt 1: status 503, retry true after 1s
	// server: key order-42 body {"name":"Rex"}
	// attempt 2: status 503, retry true after 1s
	// server: key order-42 body {"name":"Rex"}
	// attempt 3: status 201, retry false after 0s
	// err <nil>, key order-42, attempts 3, status 201
}

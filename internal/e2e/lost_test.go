package e2e_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/e2e/clientapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// dropFirstAnswer runs the first request's handler to the end (so its result
// is stored) and then resets the connection instead of answering: the
// client never reads the response. Later requests pass through.
type dropFirstAnswer struct {
	next    http.Handler
	dropped atomic.Bool
}

func (d *dropFirstAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !d.dropped.CompareAndSwap(false, true) {
		d.next.ServeHTTP(w, r)
		return
	}
	d.next.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err) // httptest's HTTP/1.1 server always hijacks
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // close with RST, as a crashed proxy would
	}
	conn.Close()
}

// TestLostResponse is the reason the whole thing exists: the first attempt
// runs on the server but its answer never reaches the client; the generated
// client retries with the same key and bytes and gets the stored replay,
// and the handler ran once.
func TestLostResponse(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, srv := range servers() {
				t.Run(srv.name, func(t *testing.T) {
					s := &shop{}
					drop := &dropFirstAnswer{next: srv.handler(s, b.store(t))}
					ts := httptest.NewServer(drop)
					t.Cleanup(ts.Close)
					var res idem.CallResult
					resp, err := newClient(t, ts.URL, "key-of-tenant-a").CreateOrder(context.Background(), nil,
						clientapi.CreateOrderJSONRequestBody{Item: "plum", Quantity: 2}, idem.WithResult(&res))
					if err != nil {
						t.Fatal(err)
					}
					if !drop.dropped.Load() {
						t.Fatal("the first answer was not dropped")
					}
					if resp.StatusCode() != http.StatusCreated || resp.JSON201 == nil {
						t.Fatalf("status %d, body %s", resp.StatusCode(), resp.Body)
					}
					if res.Attempts != 2 || !res.Replayed {
						t.Errorf("result %+v, want the replay on attempt 2", res)
					}
					if got := resp.HTTPResponse.Header.Get(idemop.HeaderReplayed); got != "true" {
						t.Errorf("%s = %q, want true", idemop.HeaderReplayed, got)
					}
					wantCount(t, "createOrder", s.created.Load(), 1)
				})
			}
		})
	}
}

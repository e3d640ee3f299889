package e2e_test

import (
	"net/http"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestAPIsSharingRedisKeepApart: two services whose specs both have
// CreateOrder share one Redis and one prefix. A client key that the first
// used is a first request for the second: it runs, and is not answered with
// the other service's stored body. Each API's retry replays its own.
func TestAPIsSharingRedisKeepApart(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	serve := func(api, body string) *harness {
		return newHarnessOn(t, redisstore.New(rdb, redisstore.WithPrefix(prefix)), idemop.Operation{ID: "CreateOrder", API: api},
			func(h *harness, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(body))
			})
	}
	orders, billing := serve("orders-api", "order o1"), serve("billing-api", "invoice i1")
	for i := range 2 {
		if w := orders.post("k", `{}`); w.Body.String() != "order o1" {
			t.Fatalf("orders, request %d: %q", i+1, w.Body)
		}
		if w := billing.post("k", `{}`); w.Body.String() != "invoice i1" {
			t.Fatalf("billing, request %d: %q (%s), want its own answer", i+1, w.Body, w.Header().Get(idemop.HeaderReplayed))
		}
	}
	orders.wantRuns(1)
	billing.wantRuns(1)

	// WithAPI overrides the generated identity: the same generated code
	// deployed as two services.
	other := newHarnessOn(t, redisstore.New(rdb, redisstore.WithPrefix(prefix)), idemop.Operation{ID: "CreateOrder", API: "orders-api"},
		nil, idem.WithAPI("orders-eu"))
	if w := other.post("k", `{}`); w.Header().Get(idemop.HeaderReplayed) != "" || w.Code != http.StatusCreated {
		t.Fatalf("WithAPI: %d replayed %q", w.Code, w.Header().Get(idemop.HeaderReplayed))
	}
	other.wantRuns(1)
}

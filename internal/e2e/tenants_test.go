package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/e2e/clientapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// failingStore fails the next Acquire when armed, to make the engine log.
type failingStore struct {
	idemstore.Store
	fail atomic.Bool
}

func (s *failingStore) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	if s.fail.CompareAndSwap(true, false) {
		return idemstore.Acquisition{}, fmt.Errorf("%w: test outage", idemstore.ErrStoreUnavailable)
	}
	return s.Store.Acquire(ctx, req)
}

// TestTenantsOnRealRedis: two tenants (API keys) send the same idempotency
// key with the same body through the generated client: each gets its own
// run and, on a retry, its own replay, in both server styles; neither API
// key appears in a Redis key or a log line.
func TestTenantsOnRealRedis(t *testing.T) {
	const keyA, keyB = "sk_live_tenantA_9f8e7d", "sk_live_tenantB_1a2b3c"
	for i, style := range servers() {
		t.Run(style.name, func(t *testing.T) {
			rdb, prefix := redistest.Keyspace(t)
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			srv := serversWith(append(scoped(), idem.WithLogger(logger))...)[i]
			store := &failingStore{Store: redisstore.New(rdb, redisstore.WithPrefix(prefix))}
			s := &shop{}
			ts := httptest.NewServer(srv.handler(s, store))
			t.Cleanup(ts.Close)
			body := clientapi.CreateOrderJSONRequestBody{Item: "fig", Quantity: 1}
			call := func(apiKey string) (*clientapi.CreateOrderResponse, idem.CallResult) {
				var res idem.CallResult
				resp, err := newClient(t, ts.URL, apiKey).CreateOrder(context.Background(), nil, body, idem.WithKey("order-1"), idem.WithResult(&res))
				if err != nil || resp.JSON201 == nil {
					t.Fatalf("tenant %s: %v (%+v)", apiKey, err, resp)
				}
				return resp, res
			}
			a, resA := call(keyA)
			b, resB := call(keyB)
			if resA.Replayed || resB.Replayed || a.JSON201.Id == b.JSON201.Id {
				t.Fatalf("tenant B got tenant A's order: %s (replayed %v), %s (replayed %v)", a.JSON201.Id, resA.Replayed, b.JSON201.Id, resB.Replayed)
			}
			wantCount(t, "createOrder", s.created.Load(), 2)
			for apiKey, want := range map[string]string{keyA: a.JSON201.Id, keyB: b.JSON201.Id} {
				if again, res := call(apiKey); !res.Replayed || again.JSON201.Id != want {
					t.Errorf("retry of %s: %s (replayed %v), want the replay of %s", apiKey, again.JSON201.Id, res.Replayed, want)
				}
			}
			wantCount(t, "createOrder", s.created.Load(), 2)

			store.fail.Store(true) // an outage, which the engine logs
			out := do(t, ts.Config.Handler, "POST", "/orders", `{"item":"fig","quantity":1}`, "Idempotency-Key", "order-1", "X-API-Key", keyA)
			wantStatus(t, out, http.StatusServiceUnavailable)

			var keys []string
			iter := rdb.Scan(context.Background(), 0, prefix+"*", 100).Iterator()
			for iter.Next(context.Background()) {
				// Records only: the store also keeps its layout marker and
				// the names of the operations' tokens.
				if _, _, _, ok := idemstore.SplitRecordKey(strings.TrimPrefix(strings.TrimPrefix(iter.Val(), prefix), ":")); ok {
					keys = append(keys, iter.Val())
				}
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
			if len(keys) != 2 {
				t.Errorf("Redis keys %q, want one per tenant", keys)
			}
			for _, k := range keys {
				if strings.Contains(k, "tenant") {
					t.Errorf("Redis key %q holds an API key", k)
				}
			}
			if !strings.Contains(logs.String(), "key_hash=") {
				t.Errorf("no log line to check: %q", logs.String())
			}
			if strings.Contains(logs.String(), "tenant") {
				t.Errorf("an API key leaked into the logs: %s", logs.String())
			}
		})
	}
}

// TestUnscopedServerRefusesToStart: the spec requires the API key, so both
// generated constructors refuse a shared key space that nobody chose, and
// say what to add; WithSharedKeySpace is that choice.
func TestUnscopedServerRefusesToStart(t *testing.T) {
	for _, srv := range serversWith() {
		t.Run(srv.name, func(t *testing.T) {
			msg := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				srv.handler(&shop{}, nopStore{})
				return ""
			}()
			for _, want := range []string{"CreateOrder", `idem.WithScopeFromHeader("X-API-Key")`, "idem.WithSharedKeySpace()"} {
				if !strings.Contains(msg, want) {
					t.Errorf("panic %q lacks %q", msg, want)
				}
			}
		})
	}
	for _, srv := range serversWith(idem.WithSharedKeySpace()) {
		srv.handler(&shop{}, nopStore{}) // does not panic
	}
}

// nopStore is a store the constructors take but no request reaches.
type nopStore struct{ idemstore.Store }

// TestKeylessCallersRefused: the spec requires an API key and the servers
// scope keys by it, so a request without one (or with an empty one) is
// answered 401 missing-credential in every style, before the handler runs:
// keyless callers never share a key space, on real Redis.
func TestKeylessCallersRefused(t *testing.T) {
	for _, srv := range bareServersWith(scoped()...) {
		t.Run(srv.name, func(t *testing.T) {
			rdb, prefix := redistest.Keyspace(t)
			s := &shop{}
			h := srv.handler(s, redisstore.New(rdb, redisstore.WithPrefix(prefix)))
			for _, header := range [][]string{{"Idempotency-Key", "k"}, {"Idempotency-Key", "k", "X-API-Key", ""}} {
				out := do(t, h, "POST", "/orders", `{"item":"fig","quantity":1}`, header...)
				wantStatus(t, out, http.StatusUnauthorized)
				if code := problemCode(t, out); code != idemop.CodeMissingCredential {
					t.Errorf("code %q, want %q", code, idemop.CodeMissingCredential)
				}
			}
			wantCount(t, "createOrder", s.created.Load(), 0)
			if n, err := rdb.Keys(context.Background(), prefix+"*").Result(); err != nil || len(n) != 0 {
				t.Errorf("stored %q (%v), want nothing", n, err)
			}
		})
	}
}

package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	plainapi "github.com/idemgen/idemgen/examples/petstore/api/plain"
	"github.com/idemgen/idemgen/examples/petstore/server"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	"github.com/idemgen/idemgen/internal/probe"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// petstoreOn starts the petstore's strict server on real Redis, with pet 1
// in the shop, behind deploy (how it is deployed: as is, behind a proxy,
// ...), on a loopback listener.
func petstoreOn(t *testing.T, deploy func(wrapped http.Handler, s *shop.Shop, store idemstore.Store, opts []idem.Option) http.Handler) (*url.URL, *shop.Shop) {
	t.Helper()
	s := shop.New()
	s.AddPet(context.Background(), "Rex", "dog", "")
	store := redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
	opts := server.ScopedByAPIKey([]byte("petstore probe test secret, 32 b"))
	h := server.NewStrictHandler(s, store, opts...)
	if deploy != nil {
		h = deploy(h, s, store, opts)
	}
	srv := httptest.NewServer(h) // loopback
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u, s
}

// probePetstore runs idemctl probe's checks against base with the
// petstore's spec and config, and returns the table.
func probePetstore(t *testing.T, base *url.URL) []probe.Row {
	t.Helper()
	rows, err := probe.Probe(context.Background(), probe.Config{
		Spec:          "../api/openapi.yaml",
		CodegenConfig: "../api/strict/cfg.yaml",
		BaseURL:       base,
		Header:        http.Header{"X-Api-Key": {"sk_probe_first"}},
		Other:         http.Header{"X-Api-Key": {"sk_probe_second"}},
		Concurrent:    8,
		Client:        &http.Client{Timeout: 30 * time.Second},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// failed lists the failed checks of rows as "operation: check".
func failed(rows []probe.Row) []string {
	var out []string
	for _, r := range rows {
		if r.Result == probe.Fail {
			out = append(out, r.Operation+": "+r.Check)
		}
	}
	return out
}

func table(rows []probe.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s | %s | %s | %s | %s\n", r.Operation, r.Check, r.Expected, r.Got, r.Result)
	}
	return b.String()
}

// TestProbePassesThePetstore: the example server, deployed as is, keeps
// the contract, every marked operation is probed, and each ran exactly as
// often as the probe's checks expect it to (the shop counts): once per
// fresh key and caller, never for a duplicate.
func TestProbePassesThePetstore(t *testing.T) {
	base, s := petstoreOn(t, nil)
	before := map[string]int{}
	for _, op := range []string{"createPet", "adoptPet", "createPayment"} {
		before[op] = s.Runs(op) // petstoreOn added pet 1
	}
	rows := probePetstore(t, base)
	if f := failed(rows); len(f) > 0 {
		t.Fatalf("broken checks %v against the correct server:\n%s", f, table(rows))
	}
	probed := map[string]bool{}
	for _, r := range rows {
		if r.Result == probe.Skipped {
			t.Errorf("%s: %s skipped: %s", r.Operation, r.Check, r.Got)
		}
		probed[r.Operation] = true
	}
	for _, op := range []string{"adoptPet", "createPayment", "createPet"} {
		if !probed[op] {
			t.Errorf("%s was not probed", op)
		}
	}
	// Runs: the first request, the concurrent burst, the second caller;
	// createPayment also the body-key check.
	for op, want := range map[string]int{"createPet": 3, "adoptPet": 3, "createPayment": 4} {
		if got := s.Runs(op) - before[op]; got != want {
			t.Errorf("%s ran %d times under the probe, want %d:\n%s", op, got, want, table(rows))
		}
	}
}

// TestProbeCatchesBrokenDeployments: each way of deploying the petstore
// that silently turns "runs once" off is reported, naming the check.
func TestProbeCatchesBrokenDeployments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deploy func(wrapped http.Handler, s *shop.Shop, store idemstore.Store, opts []idem.Option) http.Handler
		want   []string // checks that must fail
		pass   []string // operations that must pass every check
	}{
		{"a proxy that drops Idempotency-Key", func(wrapped http.Handler, _ *shop.Shop, _ idemstore.Store, _ []idem.Option) http.Handler {
			backend := httptest.NewServer(wrapped)
			t.Cleanup(backend.Close)
			u, _ := url.Parse(backend.URL)
			proxy := httputil.NewSingleHostReverseProxy(u)
			direct := proxy.Director
			proxy.Director = func(r *http.Request) {
				direct(r)
				r.Header.Del("Idempotency-Key")
			}
			return proxy
		}, []string{"createPet: first request", "createPet: replay", "adoptPet: first request"}, []string{"createPayment"}},

		{"a route left unwrapped", func(wrapped http.Handler, s *shop.Shop, store idemstore.Store, opts []idem.Option) http.Handler {
			bare := plainapi.HandlerWithOptions(server.Plain{Shop: s}, plainapi.ChiServerOptions{BaseRouter: chi.NewRouter()})
			mux := http.NewServeMux()
			mux.Handle("POST /pets", bare) // mounted without WithIdempotency
			mux.Handle("/", wrapped)
			return mux
		}, []string{"createPet: missing key", "createPet: replay", "createPet: same key, another request"}, []string{"adoptPet", "createPayment"}},

		{"a server that does not replay headers", func(wrapped http.Handler, _ *shop.Shop, _ idemstore.Store, _ []idem.Option) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				wrapped.ServeHTTP(&stripReplay{ResponseWriter: w}, r)
			})
		}, []string{"createPet: replay", "createPayment: replay", "adoptPet: replay"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := petstoreOn(t, tc.deploy)
			rows := probePetstore(t, base)
			got := failed(rows)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not reported; failed: %v\n%s", w, got, table(rows))
				}
			}
			for _, op := range tc.pass {
				for _, f := range got {
					if strings.HasPrefix(f, op+": ") {
						t.Errorf("%s failed, though this deployment keeps its contract\n%s", f, table(rows))
					}
				}
			}
		})
	}
}

// stripReplay drops Idempotent-Replayed and Location from replays, as a
// gateway with a header allow-list of its own would.
type stripReplay struct{ http.ResponseWriter }

func (w *stripReplay) WriteHeader(status int) {
	if h := w.Header(); h.Get(idemop.HeaderReplayed) == "true" {
		h.Del(idemop.HeaderReplayed)
		h.Del("Location")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *stripReplay) Write(b []byte) (int, error) {
	return w.ResponseWriter.Write(b) // WriteHeader ran first: the replay writes its status
}

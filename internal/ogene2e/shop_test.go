package ogene2e_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/ogene2e/api"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// shop is the ogen Handler of the tests: it counts its runs, records the
// idempotency information its context carries, and, with a gate, holds a
// run until the test lets it go.
type shop struct {
	runs  atomic.Int64 // runs of the idempotent operations
	lists atomic.Int64 // runs of listOrders
	gate  *gate        // nil: runs go straight through

	mu   sync.Mutex
	keys []string // idem.FromContext(ctx).Key of each run, "" when absent
	// write, when set, is called in each run with its context and key: a
	// write through the store's transaction.
	write func(ctx context.Context, key string) error
}

// gate holds the first run that passes it: entered receives once it has
// begun, and it returns when release is closed. Later runs pass, so that a
// layer that lets duplicates through fails the test instead of hanging it.
type gate struct {
	taken   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

// hold holds the first run to call it until release is closed.
func (g *gate) hold() {
	if g.taken.CompareAndSwap(false, true) {
		g.entered <- struct{}{}
		<-g.release
	}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1), release: make(chan struct{})} }

// begin counts a run and records its context's key.
func (s *shop) begin(ctx context.Context) (int, error) {
	n := s.runs.Add(1)
	info, _ := idem.FromContext(ctx)
	s.mu.Lock()
	s.keys = append(s.keys, info.Key)
	s.mu.Unlock()
	if s.write != nil {
		if err := s.write(ctx, info.Key); err != nil {
			return 0, err
		}
	}
	if s.gate != nil {
		s.gate.hold()
	}
	return int(n), nil
}

func (s *shop) CreateOrder(ctx context.Context, req *api.NewOrder, _ api.CreateOrderParams) (*api.Order, error) {
	n, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	return &api.Order{ID: fmt.Sprintf("order-%d", n), Item: req.Item, Run: n}, nil
}

func (s *shop) ShipOrder(ctx context.Context, params api.ShipOrderParams) (*api.Order, error) {
	n, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	return &api.Order{ID: params.OrderId, Item: "shipped", Run: n}, nil
}

func (s *shop) CreatePayment(ctx context.Context, req *api.NewPayment) (*api.Payment, error) {
	n, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	return &api.Payment{ID: fmt.Sprintf("pay-%d", n), Amount: req.Amount}, nil
}

func (s *shop) ListOrders(context.Context) ([]api.Order, error) {
	s.lists.Add(1)
	return []api.Order{}, nil
}

var _ api.Handler = (*shop)(nil)

// storeCase is one store the scenarios run on.
type storeCase struct {
	name string
	new  func(t *testing.T) idemstore.Store
}

// storeCases are the stores every scenario runs on: the reference store,
// Redis at REDIS_URL under a key prefix of the test's own, and PostgreSQL
// (DATABASE_URL) and MariaDB (MYSQL_DSN) on tables of the test's own.
var storeCases = []storeCase{
	{"memstore", func(*testing.T) idemstore.Store { return memstore.New() }},
	{"redis", func(t *testing.T) idemstore.Store {
		rdb, prefix := redistest.Keyspace(t)
		return redisstore.New(rdb, redisstore.WithPrefix(prefix))
	}},
	{"postgres", func(t *testing.T) idemstore.Store {
		s, _ := pgtest.Store(t, pgtest.Pool(t, 20))
		return s
	}},
	{"mariadb", func(t *testing.T) idemstore.Store {
		s, _ := mysqltest.Store(t, mysqltest.DB(t, 20))
		return s
	}},
}

// serve starts ogen's server for h behind the idempotency layer on store.
func serve(t *testing.T, h api.Handler, store idemstore.Store, opts ...idem.Option) *httptest.Server {
	t.Helper()
	srv, err := api.NewServer(h)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.WithIdempotency(srv, store, opts...))
	t.Cleanup(ts.Close)
	return ts
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// problemCode is the code member of a problem answer, "" for another.
func (a answer) problemCode() string {
	var p struct{ Code string }
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") || json.Unmarshal(a.body, &p) != nil {
		return ""
	}
	return p.Code
}

func (a answer) replayed() bool { return a.header.Get(idemop.HeaderReplayed) == "true" }

// post sends body to path with key as the Idempotency-Key ("" for none).
func post(t *testing.T, ts *httptest.Server, path, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return do(t, ts, req)
}

func do(t *testing.T, ts *httptest.Server, req *http.Request) answer {
	t.Helper()
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// eachStore runs fn on every store case.
func eachStore(t *testing.T, fn func(t *testing.T, store idemstore.Store)) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) { fn(t, sc.new(t)) })
	}
}

func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		const n = 16
		h := &shop{gate: newGate()}
		ts := serve(t, h, store)
		answers := make(chan answer, n)
		for range n {
			go func() { answers <- post(t, ts, "/orders", "dup-1", `{"item":"book"}`) }()
		}
		// One request runs and is held; every other one arrives while it
		// runs and is told so.
		<-h.gate.entered
		for range n - 1 {
			if a := <-answers; a.status != http.StatusConflict || a.problemCode() != idemop.CodeConflict || a.header.Get("Retry-After") == "" {
				t.Errorf("a duplicate during the run: %d %s %q, want 409 conflict with Retry-After", a.status, a.header, a.body)
			}
		}
		close(h.gate.release)
		if a := <-answers; a.status != http.StatusCreated || a.replayed() {
			t.Errorf("the run's answer: %d replayed=%v %q, want 201 from the run", a.status, a.replayed(), a.body)
		}
		if got := h.runs.Load(); got != 1 {
			t.Errorf("%d runs of the handler, want 1", got)
		}
	})
}

func TestRetryReplaysTheSameBytes(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		ts := serve(t, h, store)
		first := post(t, ts, "/orders", "retry-1", `{"item":"book"}`)
		again := post(t, ts, "/orders", "retry-1", `{"item":"book"}`)
		if first.status != http.StatusCreated || first.replayed() {
			t.Fatalf("first: %d replayed=%v %q, want 201 from the run", first.status, first.replayed(), first.body)
		}
		if again.status != first.status || !again.replayed() || !bytes.Equal(again.body, first.body) ||
			again.header.Get("Content-Type") != first.header.Get("Content-Type") {
			t.Errorf("retry: %d replayed=%v %q (%s), want the first answer %d %q (%s), replayed",
				again.status, again.replayed(), again.body, again.header.Get("Content-Type"),
				first.status, first.body, first.header.Get("Content-Type"))
		}
		if got := h.runs.Load(); got != 1 {
			t.Errorf("%d runs of the handler, want 1", got)
		}
	})
}

func TestKeyReusedForAnotherPayload(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		ts := serve(t, h, store)
		post(t, ts, "/orders", "reuse-1", `{"item":"book"}`)
		a := post(t, ts, "/orders", "reuse-1", `{"item":"lamp"}`)
		if a.status != http.StatusUnprocessableEntity || a.problemCode() != idemop.CodeFingerprintMismatch {
			t.Errorf("another payload under the key: %d %q, want 422 fingerprint-mismatch", a.status, a.body)
		}
		if got := h.runs.Load(); got != 1 {
			t.Errorf("%d runs of the handler, want 1", got)
		}
	})
}

func TestBodyKey(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		ts := serve(t, h, store)
		first := post(t, ts, "/payments", "", `{"idempotency_key":"pay-1","amount":5}`)
		again := post(t, ts, "/payments", "", `{"idempotency_key":"pay-1","amount":5}`)
		other := post(t, ts, "/payments", "", `{"idempotency_key":"pay-1","amount":6}`)
		if first.status != http.StatusCreated || !again.replayed() || !bytes.Equal(again.body, first.body) {
			t.Errorf("first %d %q, retry %d replayed=%v %q: want 201 and its replay", first.status, first.body, again.status, again.replayed(), again.body)
		}
		if other.status != http.StatusUnprocessableEntity {
			t.Errorf("another amount under the body's key: %d %q, want 422", other.status, other.body)
		}
		if got := h.runs.Load(); got != 1 {
			t.Errorf("%d runs of the handler, want 1", got)
		}
	})
}

func TestPathParameters(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		ts := serve(t, h, store)
		first := post(t, ts, "/orders/o%2F1/ship", "ship-1", "")
		again := post(t, ts, "/orders/o%2F1/ship", "ship-1", "")
		if first.status != http.StatusAccepted || !again.replayed() || !bytes.Equal(again.body, first.body) {
			t.Errorf("first %d %q, retry %d replayed=%v %q: want 202 and its replay", first.status, first.body, again.status, again.replayed(), again.body)
		}
		if !strings.Contains(string(first.body), `"o/1"`) {
			t.Errorf("ogen decoded the escaped path parameter as %q, want o/1", first.body)
		}
		if got := h.runs.Load(); got != 1 {
			t.Errorf("%d runs of the handler, want 1", got)
		}
	})
}

// wantRefused posts one order with key and body to a shop on store (with
// opts) and wants the engine's problem answer status and code, the
// handler not run.
func wantRefused(t *testing.T, store idemstore.Store, key, body string, status int, code string, opts ...idem.Option) {
	t.Helper()
	h := &shop{}
	ts := serve(t, h, store, opts...)
	a := post(t, ts, "/orders", key, body)
	if a.status != status || a.problemCode() != code {
		t.Errorf("%d %q, want %d %s", a.status, a.body, status, code)
	}
	if got := h.runs.Load(); got != 0 {
		t.Errorf("%d runs of the handler, want 0", got)
	}
}

func TestMissingKey(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		wantRefused(t, store, "", `{"item":"book"}`, http.StatusBadRequest, idemop.CodeMissingKey)
	})
}

func TestUnmarkedOperationsPassThrough(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		ts := serve(t, h, store)
		for range 2 {
			req, _ := http.NewRequest(http.MethodGet, ts.URL+"/orders", nil)
			req.Header.Set("Idempotency-Key", "list-1")
			if a := do(t, ts, req); a.status != http.StatusOK || a.replayed() {
				t.Errorf("listOrders: %d replayed=%v %q, want 200 from the handler", a.status, a.replayed(), a.body)
			}
		}
		if got := h.lists.Load(); got != 2 {
			t.Errorf("%d runs of listOrders, want 2", got)
		}
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/nowhere", nil)
		if a := do(t, ts, req); a.status != http.StatusNotFound {
			t.Errorf("an unknown path: %d, want ogen's 404", a.status)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		wantRefused(t, store, "big-1", `{"item":"`+strings.Repeat("x", 64)+`"}`,
			http.StatusRequestEntityTooLarge, idemop.CodePayloadTooLarge, idem.WithBodyLimit(32))
	})
}

// txCase is a store that runs the handler in its transaction: write
// writes key through the transaction a handler's context carries, and
// committed counts the committed writes of key. (The reference store's
// transactions, memstore.NewTx, are the runtime's own tests'.)
type txCase struct {
	name string
	new  func(t *testing.T) (store idemstore.Store, write func(ctx context.Context, key string) error, committed func(key string) int)
}

var txCases = []txCase{
	{"postgres", func(t *testing.T) (idemstore.Store, func(context.Context, string) error, func(string) int) {
		pool := pgtest.Pool(t, 20)
		store, _ := pgtest.Store(t, pool)
		table := pgtest.Name(t) + "_orders"
		pgtest.Exec(t, pool, "CREATE TABLE "+table+" (key text NOT NULL)")
		t.Cleanup(func() { pgtest.Drop(t, pool, table) })
		write := func(ctx context.Context, key string) error {
			_, err := pgstore.Tx(ctx).Exec(ctx, "INSERT INTO "+table+" (key) VALUES ($1)", key)
			return err
		}
		return store, write, func(key string) int { return pgtest.Count(t, pool, table, "key = $1", key) }
	}},
	{"mariadb", func(t *testing.T) (idemstore.Store, func(context.Context, string) error, func(string) int) {
		db := mysqltest.DB(t, 20)
		store, _ := mysqltest.Store(t, db)
		table := mysqltest.Name(t) + "_orders"
		mysqltest.Exec(t, db, "CREATE TABLE `"+table+"` (k VARCHAR(64) NOT NULL) ENGINE=InnoDB")
		t.Cleanup(func() { mysqltest.Drop(t, db, table) })
		write := func(ctx context.Context, key string) error {
			_, err := mysqlstore.Tx(ctx).ExecContext(ctx, "INSERT INTO `"+table+"` (k) VALUES (?)", key)
			return err
		}
		return store, write, func(key string) int { return mysqltest.Count(t, db, table, "k = ?", key) }
	}},
}

func TestRunTransactionReachesTheHandler(t *testing.T) {
	for _, tc := range txCases {
		t.Run(tc.name, func(t *testing.T) {
			const n = 8
			store, write, committed := tc.new(t)
			h := &shop{write: write, gate: newGate()}
			ts := serve(t, h, store)
			answers := make(chan answer, n)
			for range n {
				go func() { answers <- post(t, ts, "/orders", "tx-1", `{"item":"book"}`) }()
			}
			<-h.gate.entered
			for range n - 1 {
				if a := <-answers; a.status != http.StatusConflict {
					t.Errorf("a duplicate during the run: %d %q, want 409", a.status, a.body)
				}
			}
			close(h.gate.release)
			if a := <-answers; a.status != http.StatusCreated {
				t.Fatalf("the run: %d %q, want 201", a.status, a.body)
			}
			if a := post(t, ts, "/orders", "tx-1", `{"item":"book"}`); !a.replayed() {
				t.Errorf("the retry: %d %q, want the replay", a.status, a.body)
			}
			if len(h.keys) != 1 || h.keys[0] != "tx-1" {
				t.Errorf("idem.FromContext in the ogen handler gave keys %q, want [tx-1]", h.keys)
			}
			if got := committed("tx-1"); got != 1 {
				t.Errorf("%d writes through the run's transaction committed, want 1", got)
			}
		})
	}
}

// downStores are a Redis, a PostgreSQL and a MariaDB store of a port nothing
// listens on: every store call is refused.
func downStores(t *testing.T) map[string]idemstore.Store {
	t.Helper()
	ln := httptest.NewServer(http.NotFoundHandler())
	addr := ln.Listener.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	pool, err := pgxpool.New(context.Background(), "postgres://idem@"+addr+"/postgres?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, err := sql.Open("mysql", "idem@tcp("+addr+")/idem?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return map[string]idemstore.Store{"redis": redisstore.New(rdb), "postgres": pgstore.New(pool), "mariadb": mysqlstore.New(db)}
}

// downStore is the Redis one of downStores.
func downStore(t *testing.T) idemstore.Store { return downStores(t)["redis"] }

func TestStoreDown(t *testing.T) {
	for name, store := range downStores(t) {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, store, "down-1", `{"item":"book"}`, http.StatusServiceUnavailable, idemop.CodeStoreUnavailable)
		})
	}
}

func TestScopes(t *testing.T) {
	eachStore(t, func(t *testing.T, store idemstore.Store) {
		h := &shop{}
		ts := serve(t, h, store, idem.WithScopeFromHeader("X-Api-Key"), idem.WithScopeSecret([]byte(strings.Repeat("s", idem.MinScopeSecret))))
		order := func(apiKey string) answer {
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/orders", strings.NewReader(`{"item":"book"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "scoped-1")
			req.Header.Set("X-Api-Key", apiKey)
			return do(t, ts, req)
		}
		alice, bob, aliceAgain := order("alice"), order("bob"), order("alice")
		if alice.replayed() || bob.replayed() || !aliceAgain.replayed() || !bytes.Equal(aliceAgain.body, alice.body) {
			t.Errorf("replayed: alice %v, bob %v, alice again %v; want only alice's retry, with alice's answer", alice.replayed(), bob.replayed(), aliceAgain.replayed())
		}
		if got := h.runs.Load(); got != 2 {
			t.Errorf("%d runs of the handler, want 2: one key space per API key", got)
		}
	})
}

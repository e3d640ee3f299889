package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// Fault injection against a real redis-server that each test starts as a
// child process on a free loopback port, so it can kill and restart it.
// Nothing here sleeps to synchronise: tests wait on channels, or poll an
// observable condition with a ticker and a bounded deadline, and no
// assertion depends on how long something took.

// faultServer starts redis-server for a fault test; persist turns on the
// append-only file with fsync always, so acknowledged writes survive a
// SIGKILL. Without redis-server on PATH the test is skipped (failed under
// CI=true).
func faultServer(t *testing.T, persist bool) *redisproc.Server {
	t.Helper()
	return faultServerWith(t, redisproc.Options{Persist: persist})
}

// faultServerWith starts redis-server as opts say, for the test.
func faultServerWith(t *testing.T, opts redisproc.Options) *redisproc.Server {
	t.Helper()
	return redistest.Server(t, opts)
}

// faultClient returns a client of addr with short timeouts, closed when the
// test ends.
func faultClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           250 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		PoolSize:              32,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// faultOp is the operation of the fault tests.
var faultOp = idemop.Operation{ID: "CreateOrder", Method: http.MethodPost, Path: "/orders"}

// faultRuns counts handler executions per key. It is safe for concurrent
// use.
type faultRuns struct {
	mu   sync.Mutex // guards runs
	runs map[string]int
}

func newFaultRuns() *faultRuns { return &faultRuns{runs: map[string]int{}} }

func (c *faultRuns) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[key]++
}

func (c *faultRuns) of(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[key]
}

func (c *faultRuns) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.runs)
}

// faultAnswer is the body of the fault handlers' answers.
type faultAnswer struct {
	Key   string `json:"key"`
	Fence int64  `json:"fence"`
}

// faultHandler counts its run, calls hold (when not nil) with the run's key
// and fence, then answers 201 with a faultAnswer.
func faultHandler(runs *faultRuns, hold func(key string, fence int64)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(idemop.DefaultKeyHeader)
		info, _ := idem.FromContext(r.Context())
		runs.add(key)
		if hold != nil {
			hold(key, info.Fence)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(faultAnswer{Key: key, Fence: info.Fence})
	})
}

// faultPost serves POST /orders with key through h.
func faultPost(h http.Handler, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"SKU-42","quantity":1}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(idemop.DefaultKeyHeader, key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// faultCode returns the problem code of an answer, or "".
func faultCode(w *httptest.ResponseRecorder) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	return p.Code
}

// faultDecode decodes a faultAnswer.
func faultDecode(t *testing.T, w *httptest.ResponseRecorder) faultAnswer {
	t.Helper()
	var a faultAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Fatalf("answer %d %q: %v", w.Code, w.Body, err)
	}
	return a
}

// faultEventually polls cond every 10ms until it holds, failing the test
// with what after timeout. The timeout only bounds a hang; it asserts
// nothing about speed.
func faultEventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for: %s", timeout, what)
		}
		<-tick.C
	}
}

// faultWait receives from ch, failing the test with what after timeout.
func faultWait[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("gave up after %v waiting for: %s", timeout, what)
		panic("unreachable")
	}
}

// TestFaultRedisKilledUnderLoad kills Redis with SIGKILL while eight
// senders drive two-senders-per-key traffic through one engine, checks that
// every request while it is down is answered 503 store-unavailable, restarts
// it on the same port and checks that the same engine and client recover,
// and that no key ever ran twice.
//
// The server runs with appendfsync always, as an idempotency store should:
// a record acknowledged before the crash is still there after it. (With
// persistence off a restart forgets completed records, and a retry after it
// would run again; that is the documented cost of a volatile store, not an
// engine fault.) A lease acquired just before the kill whose completion was
// lost stays in progress until its lock expires; its key is then answered
// 409, and the senders give it up.
func TestFaultRedisKilledUnderLoad(t *testing.T) {
	ctx := context.Background()
	srv := faultServer(t, true)
	rdb := faultClient(t, srv.Addr())
	runs := newFaultRuns()
	eng := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix("fault")), idem.WithStoreTimeout(time.Second))
	h := eng.Middleware(faultOp)(faultHandler(runs, nil))

	var (
		claims    atomic.Int64       // claim i sends key load-(i/2): two senders per key
		completed atomic.Int64       // keys answered 2xx
		answered  [600]atomic.Int64  // answers per status
		mu        sync.Mutex         // guards fresh
		fresh     = map[string]int{} // non-replayed 2xx answers per key
	)
	stop := make(chan struct{})
	// send sends key until it is answered 2xx, given up after 250
	// consecutive 409s (its lease was orphaned by the crash), or stop. It
	// reports false on stop or an unexpected answer.
	send := func(key string, tick *time.Ticker) bool {
		for conflicts := 0; conflicts < 250; {
			select {
			case <-stop:
				return false
			default:
			}
			w := faultPost(h, key)
			answered[min(w.Code, len(answered)-1)].Add(1)
			switch {
			case w.Code == http.StatusCreated:
				if w.Header().Get(idemop.HeaderReplayed) != "true" {
					mu.Lock()
					fresh[key]++
					mu.Unlock()
				}
				completed.Add(1)
				return true
			case w.Code == http.StatusServiceUnavailable && faultCode(w) == idemop.CodeStoreUnavailable:
			case w.Code == http.StatusConflict:
				conflicts++ // the other sender runs it, or its lease was orphaned by the crash
			default:
				t.Errorf("key %s: unexpected answer %d %s", key, w.Code, w.Body)
				return false
			}
			select {
			case <-stop:
				return false
			case <-tick.C:
			}
		}
		return true
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for send(fmt.Sprintf("load-%d", (claims.Add(1)-1)/2), tick) {
			}
		})
	}
	var once sync.Once
	halt := func() {
		once.Do(func() { close(stop) })
		wg.Wait()
	}
	defer halt()

	faultEventually(t, 30*time.Second, "200 keys completed before the kill", func() bool { return completed.Load() >= 200 })
	srv.Kill() // SIGKILL; returns once the process is gone
	for i := range 10 {
		key := fmt.Sprintf("down-%d", i)
		w := faultPost(h, key)
		if w.Code != http.StatusServiceUnavailable || faultCode(w) != idemop.CodeStoreUnavailable || w.Header().Get("Retry-After") != "1" {
			t.Errorf("while Redis is down: %d Retry-After %q %s; want 503 store-unavailable, Retry-After 1",
				w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if n := runs.of(key); n != 0 {
			t.Errorf("while Redis is down the handler ran %d times for %s", n, key)
		}
	}
	down503 := answered[http.StatusServiceUnavailable].Load()
	faultEventually(t, 10*time.Second, "the load to see 503 while Redis is down", func() bool {
		return answered[http.StatusServiceUnavailable].Load() > down503
	})

	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	probe := 0
	faultEventually(t, 30*time.Second, "a new key answered 201 by the same engine after the restart", func() bool {
		probe++
		return faultPost(h, fmt.Sprintf("up-%d", probe)).Code == http.StatusCreated
	})
	after := completed.Load()
	faultEventually(t, 30*time.Second, "200 more keys completed after the restart", func() bool { return completed.Load() >= after+200 })
	halt()

	for key, n := range runs.snapshot() {
		if n > 1 {
			t.Errorf("key %s ran %d times", key, n)
		}
	}
	mu.Lock()
	for key, n := range fresh {
		if n != 1 || runs.of(key) != 1 {
			t.Errorf("key %s: %d fresh 201 answers and %d runs; want 1 and 1", key, n, runs.of(key))
		}
	}
	mu.Unlock()
	// The restarted server had no scripts: go-redis fell back from EVALSHA
	// to EVAL, and the engine never noticed.
	if calls := redistest.CommandCalls(t, rdb); calls["eval"] == 0 {
		t.Errorf("no EVAL after the restart (commandstats %v); the NOSCRIPT fallback was not exercised", calls)
	}
	t.Logf("answers: 201=%d 409=%d 503=%d; keys completed %d; keys run %d",
		answered[201].Load(), answered[409].Load(), answered[503].Load(), completed.Load(), len(runs.snapshot()))
}

// faultGate lets a test hold handler runs, one per (key, fence), and
// release them in the order it chooses.
type faultGate struct {
	mu    sync.Mutex // guards holds
	holds map[string]*faultHold
}

type faultHold struct {
	started chan struct{} // closed when the run reaches the handler
	release chan struct{} // closed by the test to let it answer
}

func newFaultGate() *faultGate { return &faultGate{holds: map[string]*faultHold{}} }

func (g *faultGate) get(key string, fence int64) *faultHold {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := fmt.Sprintf("%s#%d", key, fence)
	h, ok := g.holds[id]
	if !ok {
		h = &faultHold{started: make(chan struct{}), release: make(chan struct{})}
		g.holds[id] = h
	}
	return h
}

// hold is the handler's side: announce the run, wait for the release.
func (g *faultGate) hold(key string, fence int64) {
	h := g.get(key, fence)
	close(h.started)
	<-h.release
}

// TestFaultLeaseExpiryFencing lets leases expire under load: for each of
// eight keys a first run (fence 1) blocks in the handler with the
// heartbeat off, a retry polls through 409s until the lease has expired and
// takes over (fence 2), and then the first run finishes. Its late
// completion must be refused (LeaseLost, record untouched, still in
// progress under fence 2), its client must get 409 conflict (not its stale
// result), and the stored result must be the newest owner's. Background traffic on other keys runs exactly once meanwhile.
func TestFaultLeaseExpiryFencing(t *testing.T) {
	srv := faultServer(t, false)
	rdb := faultClient(t, srv.Addr())
	const prefix = "fence"
	op := faultOp
	op.Lock = 300 * time.Millisecond

	var lostMu sync.Mutex
	lost := map[int64]int{} // LeaseLost events per fence
	hooks := idem.Hooks{LeaseLost: func(_ context.Context, ev idem.Event) {
		lostMu.Lock()
		defer lostMu.Unlock()
		lost[ev.Fence]++
	}}
	gate := newFaultGate()
	runs := newFaultRuns()
	eng := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix(prefix)), idem.WithHeartbeat(false), idem.WithHooks(hooks))
	h := eng.Middleware(op)(faultHandler(runs, func(key string, fence int64) {
		if strings.HasPrefix(key, "held-") {
			gate.hold(key, fence)
		}
	}))

	// Background load: fresh keys, each sent once, each must run once.
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var bgKeys atomic.Int64
	for range 2 {
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("bg-%d", bgKeys.Add(1))
				if w := faultPost(h, key); w.Code != http.StatusCreated {
					t.Errorf("background %s: %d %s", key, w.Code, w.Body)
					return
				}
			}
		})
	}

	const keys = 8
	firsts := make([]chan *httptest.ResponseRecorder, keys)
	retries := make([]chan *httptest.ResponseRecorder, keys)
	key := func(i int) string { return fmt.Sprintf("held-%d", i) }
	for i := range keys {
		firsts[i] = make(chan *httptest.ResponseRecorder, 1)
		go func() { firsts[i] <- faultPost(h, key(i)) }()
	}
	for i := range keys {
		faultWait(t, gate.get(key(i), 1).started, 10*time.Second, key(i)+" fence 1 in the handler")
	}
	for i := range keys {
		retries[i] = make(chan *httptest.ResponseRecorder, 1)
		go func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				w := faultPost(h, key(i))
				if w.Code != http.StatusConflict {
					retries[i] <- w
					return
				}
				if ra := w.Header().Get("Retry-After"); ra == "" || ra == "0" {
					t.Errorf("409 for %s with Retry-After %q", key(i), ra)
				}
				select {
				case <-stop:
					retries[i] <- w
					return
				case <-tick.C:
				}
			}
		}()
	}
	for i := range keys {
		faultWait(t, gate.get(key(i), 2).started, 10*time.Second, key(i)+" taken over (fence 2) after the lease expired")
	}

	// The stale owners finish now: their completions must be refused.
	for i := range keys {
		close(gate.get(key(i), 1).release)
		w := faultWait(t, firsts[i], 10*time.Second, key(i)+" fence 1 answer")
		if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: the stale owner's own client got %d %s; want 409 with Retry-After while fence 2 runs",
				key(i), w.Code, strings.TrimSpace(w.Body.String()))
		}
	}
	lostMu.Lock()
	if lost[1] != keys || lost[2] != 0 {
		t.Errorf("LeaseLost events per fence = %v; want %d for fence 1 and none for fence 2", lost, keys)
	}
	lostMu.Unlock()
	for i := range keys {
		rec, err := rdb.Get(context.Background(), prefix+":"+idemstore.RecordKey(op.ID, "", key(i))).Result()
		if err != nil {
			t.Fatal(err)
		}
		// In progress: "i", 16 bytes of fingerprint, then owner, fence and
		// abandoned TTL on lines of their own (lua/lua.go).
		if f := strings.Split(rec[min(len(rec), 17):], "\n"); len(f) != 3 || rec[0] != 'i' || f[1] != "2" {
			t.Errorf("%s after the stale completion: %q; want in progress under fence 2, no result", key(i), rec)
		}
	}

	// The new owners finish: their results are stored and replayed.
	for i := range keys {
		close(gate.get(key(i), 2).release)
		w := faultWait(t, retries[i], 10*time.Second, key(i)+" fence 2 answer")
		if w.Code != http.StatusCreated || faultDecode(t, w).Fence != 2 {
			t.Fatalf("%s new owner: %d %s; want 201 fence 2", key(i), w.Code, w.Body)
		}
		replay := faultPost(h, key(i))
		if replay.Code != http.StatusCreated || replay.Header().Get(idemop.HeaderReplayed) != "true" || replay.Body.String() != w.Body.String() {
			t.Errorf("%s replay: %d %q %s; want the fence 2 result replayed", key(i), replay.Code, replay.Header().Get(idemop.HeaderReplayed), replay.Body)
		}
		if n := runs.of(key(i)); n != 2 {
			t.Errorf("%s ran %d times; want 2 (the stale owner and the one that took over)", key(i), n)
		}
	}
	close(stop)
	bg.Wait()
	for k, n := range runs.snapshot() {
		if strings.HasPrefix(k, "bg-") && n != 1 {
			t.Errorf("background key %s ran %d times", k, n)
		}
	}
	t.Logf("background keys served: %d", bgKeys.Load())
}

// faultSpyStore records the AcquireRequests it gets and fails them all: it
// tells a test which storage key and fingerprint the engine uses for a
// request, without touching Redis.
type faultSpyStore struct {
	mu   sync.Mutex // guards reqs
	reqs []idemstore.AcquireRequest
}

var errFaultSpy = errors.New("spy store: not a real store")

func (s *faultSpyStore) Acquire(_ context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	return idemstore.Acquisition{}, errFaultSpy
}

func (s *faultSpyStore) Complete(context.Context, string, string, *idemstore.Record, time.Duration) error {
	return errFaultSpy
}
func (s *faultSpyStore) Release(context.Context, string, string) error { return errFaultSpy }
func (s *faultSpyStore) Extend(context.Context, string, string, time.Duration) error {
	return errFaultSpy
}

// faultDeadWorker makes key look like a worker acquired it and died: it
// learns the engine's storage key and fingerprint for a POST with key, then
// acquires that record through store with its own token and a lease of op.Lock,
// and never completes, releases or extends it. It returns the acquire
// request used.
func faultDeadWorker(t *testing.T, store idemstore.Store, op idemop.Operation, key string) idemstore.AcquireRequest {
	t.Helper()
	spy := &faultSpyStore{}
	if w := faultPost(idem.NewEngine(spy).Middleware(op)(faultHandler(newFaultRuns(), nil)), key); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("spy engine answered %d, want 503", w.Code)
	}
	if len(spy.reqs) != 1 {
		t.Fatalf("spy saw %d acquires, want 1", len(spy.reqs))
	}
	req := spy.reqs[0]
	req.Token, req.Lease = "dead-worker-"+key, op.Lock
	acq, err := store.Acquire(context.Background(), req)
	if err != nil || acq.Outcome != idemstore.OutcomeFirstRun || acq.Fence != 1 {
		t.Fatalf("dead worker acquire: %+v, %v; want proceed with fence 1", acq, err)
	}
	return req
}

// faultUntilNotConflict polls h with key every 20ms while it answers 409
// (the dead worker's lease is live) and returns the first other answer and
// the number of 409s seen.
func faultUntilNotConflict(t *testing.T, h http.Handler, key string) (*httptest.ResponseRecorder, int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(15 * time.Second)
	for conflicts := 0; ; conflicts++ {
		w := faultPost(h, key)
		if w.Code != http.StatusConflict {
			return w, conflicts
		}
		if faultCode(w) != idemop.CodeConflict {
			t.Fatalf("409 with code %q", faultCode(w))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still in conflict after 15s", key)
		}
		<-tick.C
	}
}

// TestFaultDeadWorkerRecovered simulates a worker that acquired a key and
// died mid-handler: the next request after the lease expires takes the
// record over with fence 2, the reconciler runs first (with the request and
// Info.Recovered), the handler runs once, its result is stored, and the
// dead worker's late completion, release and extension are all refused.
func TestFaultDeadWorkerRecovered(t *testing.T) {
	ctx := context.Background()
	srv := faultServer(t, false)
	rdb := faultClient(t, srv.Addr())
	store := redisstore.New(rdb, redisstore.WithPrefix("dead"))
	op := faultOp
	op.Lock = 500 * time.Millisecond

	t.Run("recovered", func(t *testing.T) {
		const key = "order-dead-1"
		dead := faultDeadWorker(t, store, op, key)

		var mu sync.Mutex // guards order and infos
		var order []string
		var infos []idem.Info
		reconcile := func(_ context.Context, info idem.Info, r *http.Request) error {
			mu.Lock()
			defer mu.Unlock()
			if r == nil || r.Header.Get(idemop.DefaultKeyHeader) != key {
				t.Errorf("reconciler got request %v", r)
			}
			order, infos = append(order, "reconcile"), append(infos, info)
			return nil
		}
		runs := newFaultRuns()
		h := idem.NewEngine(store, idem.WithReconciler(reconcile)).Middleware(op)(faultHandler(runs, func(string, int64) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, "handler")
		}))

		w, conflicts := faultUntilNotConflict(t, h, key)
		if w.Code != http.StatusCreated || faultDecode(t, w).Fence != 2 {
			t.Fatalf("after the lease expired: %d %s; want 201 with fence 2", w.Code, w.Body)
		}
		mu.Lock()
		want := []idem.Info{{Key: key, Operation: op.ID, Fence: 2, Recovered: true}}
		if fmt.Sprint(order) != "[reconcile handler]" || fmt.Sprint(infos) != fmt.Sprint(want) {
			t.Errorf("order %v, reconciler infos %+v; want [reconcile handler] and %+v", order, infos, want)
		}
		mu.Unlock()
		if n := runs.of(key); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}

		// The dead worker comes back: it may not complete, release or extend.
		late := &idemstore.Record{Status: http.StatusCreated, Body: []byte(`{"late":true}`)}
		if err := store.Complete(ctx, dead.Key, dead.Token, late, time.Minute); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("dead worker's Complete: %v, want ErrNotOwner", err)
		}
		if err := store.Release(ctx, dead.Key, dead.Token); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("dead worker's Release: %v, want ErrNotOwner", err)
		}
		if err := store.Extend(ctx, dead.Key, dead.Token, time.Minute); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("dead worker's Extend: %v, want ErrNotOwner", err)
		}
		replay := faultPost(h, key)
		if replay.Code != http.StatusCreated || replay.Header().Get(idemop.HeaderReplayed) != "true" || replay.Body.String() != w.Body.String() {
			t.Errorf("replay: %d %s; want the recovered run's result", replay.Code, replay.Body)
		}
		if n := runs.of(key); n != 1 {
			t.Errorf("handler ran %d times after the replay, want 1", n)
		}
		t.Logf("409 answers while the dead worker's lease was live: %d", conflicts)
	})

	t.Run("reconcile-fails", func(t *testing.T) {
		const key = "order-dead-2"
		faultDeadWorker(t, store, op, key)
		var calls atomic.Int64
		reconcile := func(context.Context, idem.Info, *http.Request) error {
			calls.Add(1)
			return errors.New("ledger unreachable")
		}
		runs := newFaultRuns()
		h := idem.NewEngine(store, idem.WithReconciler(reconcile)).Middleware(op)(faultHandler(runs, nil))
		w, _ := faultUntilNotConflict(t, h, key)
		if w.Code != http.StatusServiceUnavailable || faultCode(w) != idemop.CodeReconcileFailed {
			t.Fatalf("failed reconcile: %d %s; want 503 reconcile-failed", w.Code, w.Body)
		}
		if n := runs.of(key); n != 0 || calls.Load() != 1 {
			t.Fatalf("after a failed reconcile: %d runs, %d reconciler calls; want 0 and 1", n, calls.Load())
		}
		// The lease was released: the next retry runs the operation.
		if w := faultPost(h, key); w.Code != http.StatusCreated {
			t.Fatalf("retry after a failed reconcile: %d %s", w.Code, w.Body)
		}
		if n := runs.of(key); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
	})
}

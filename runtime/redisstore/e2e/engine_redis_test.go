package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// engineBackend is a Redis the engine suite runs against.
type engineBackend struct {
	name  string
	store func(t *testing.T) idemstore.Store
}

// redisBackends are real Redis (REDIS_URL) and miniredis, each store under
// a prefix of the test's own.
func redisBackends() []engineBackend {
	return []engineBackend{
		{"redis", func(t *testing.T) idemstore.Store {
			return redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
		}},
		{"miniredis", func(t *testing.T) idemstore.Store {
			_, rdb := embedredis.StartTB(t)
			return redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t)))
		}},
	}
}

// forEachRedis runs test against every engineBackend.
func forEachRedis(t *testing.T, test func(t *testing.T, store idemstore.Store)) {
	for _, b := range redisBackends() {
		t.Run(b.name, func(t *testing.T) { test(t, b.store(t)) })
	}
}

// semanticsHarness is the engine on store over createHandler, which answers
// 502 to a request with X-Fail, with a stored-body limit of 64 bytes and
// X-Unlisted on the replay allow-list.
func semanticsHarness(t *testing.T, store idemstore.Store) *harness {
	return newHarnessOn(t, store, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Fail") != "" {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		createHandler(h, w, r)
	}, idem.WithStoredBodyLimit(64), idem.WithReplayHeaders("X-Unlisted"))
}

// TestRedisReplay: a retry with the key and the same JSON (spaced
// differently) is answered the stored status, body and allow-listed
// headers, marked replayed, without Set-Cookie; the handler ran once.
func TestRedisReplay(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		h := semanticsHarness(t, store)
		first := h.post("k", `{"name":"rex"}`)
		w := h.post("k", `{ "name": "rex" }`)
		if w.Code != http.StatusCreated || w.Body.String() != first.Body.String() || w.Header().Get(idemop.HeaderReplayed) != "true" ||
			w.Header().Get("Location") != "/pets/1" || w.Header().Get("X-Unlisted") != "yes" || w.Header().Get("Set-Cookie") != "" {
			t.Fatalf("replay = %d %s %v", w.Code, w.Body, w.Header())
		}
		h.wantRuns(1)
	})
}

// TestRedisMismatchLeavesTheRecord: the key with another body is 422
// fingerprint-mismatch, and the stored record still replays.
func TestRedisMismatchLeavesTheRecord(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		h := semanticsHarness(t, store)
		first := h.post("k", `{"name":"rex"}`)
		checkProblem(t, h.post("k", `{"name":"fido"}`), http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
		if w := h.post("k", `{"name":"rex"}`); w.Body.String() != first.Body.String() || w.Header().Get(idemop.HeaderReplayed) != "true" {
			t.Fatalf("the mismatch changed the record: %s", w.Body)
		}
		h.wantRuns(1)
	})
}

// TestRedis5xxReleases: a 502 is not stored: the retry runs the handler
// again, and its answer is not a replay.
func TestRedis5xxReleases(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		h := semanticsHarness(t, store)
		h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k2", "X-Fail", "1"))
		if w := h.post("k2", `{}`); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
			t.Fatalf("after a 502: %d, replayed %q", w.Code, w.Header().Get(idemop.HeaderReplayed))
		}
		h.wantRuns(2)
	})
}

// TestRedisBodyOverTheLimit: a response body over the stored-body limit
// is not stored: the replay has the status, no body, and says so.
func TestRedisBodyOverTheLimit(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		h := semanticsHarness(t, store)
		long := `{"name":"a very long name that makes the response larger than sixty-four bytes"}`
		h.post("k3", long)
		if w := h.post("k3", long); w.Code != http.StatusCreated || w.Body.Len() != 0 || w.Header().Get(idemop.HeaderBodyOmitted) != "true" {
			t.Fatalf("omitted body replay = %d %q %v", w.Code, w.Body, w.Header())
		}
		h.wantRuns(1)
	})
}

// TestRedisConcurrentSameKey: 64 requests with one key at once run the
// handler exactly once; every other answer is a 409 or the identical replay.
func TestRedisConcurrentSameKey(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		h := newHarnessOn(t, store, idemop.Operation{}, nil)
		const n = 64
		start := make(chan struct{})
		answers := make([]*httptest.ResponseRecorder, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				answers[i] = h.post("same", `{"name":"rex"}`)
			})
		}
		close(start)
		wg.Wait()
		h.wantRuns(1)
		var original *httptest.ResponseRecorder
		for _, w := range answers {
			if w.Code == http.StatusCreated && w.Header().Get(idemop.HeaderReplayed) == "" {
				original = w
			}
		}
		if original == nil {
			t.Fatal("no answer is the original")
		}
		for i, w := range answers {
			switch {
			case w == original:
			case w.Code == http.StatusConflict:
				checkProblem(t, w, http.StatusConflict, idemop.CodeConflict)
			case w.Code == http.StatusCreated && w.Header().Get(idemop.HeaderReplayed) == "true":
				if w.Body.String() != original.Body.String() {
					t.Errorf("answer %d: replay %q differs from %q", i, w.Body, original.Body)
				}
			default:
				t.Errorf("answer %d: %d %s", i, w.Code, w.Body)
			}
		}
	})
}

// TestRedisDistinctKeys: 1,000 distinct keys in parallel run 1,000 times.
func TestRedisDistinctKeys(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		// 1,000 requests share the client's small connection pool: the
		// store timeout must cover the queue, this is no latency test.
		h := newHarnessOn(t, store, idemop.Operation{}, nil, idem.WithStoreTimeout(time.Minute))
		const n = 1000
		start := make(chan struct{})
		var wg sync.WaitGroup
		var created atomic.Int64
		for i := range n {
			wg.Go(func() {
				<-start
				if w := h.post("key-"+strconv.Itoa(i), `{}`); w.Code == http.StatusCreated {
					created.Add(1)
				} else {
					t.Errorf("key %d: %d %s", i, w.Code, w.Body)
				}
			})
		}
		close(start)
		wg.Wait()
		h.wantRuns(n)
		if created.Load() != n {
			t.Errorf("created = %d", created.Load())
		}
	})
}

// TestRedisTakeover: with the heartbeat off, a handler outlives its 50ms
// lease; a duplicate (waiting for the lease to run out) takes over with
// fence 2, its result is stored, and the first worker's late completion is
// refused; its client gets the stored fence 2 result, replayed.
func TestRedisTakeover(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		started, start := onceSignal()
		release := make(chan struct{})
		infos := make(chan idem.Info, 2)
		var lost atomic.Int64
		h := newHarnessOn(t, store, idemop.Operation{Lock: 50 * time.Millisecond, Wait: time.Minute},
			func(h *harness, w http.ResponseWriter, r *http.Request) {
				info, _ := idem.FromContext(r.Context())
				infos <- info
				blockingFirst(start, release)(h, w, r)
			},
			idem.WithHeartbeat(false),
			idem.WithHooks(idem.Hooks{LeaseLost: func(context.Context, idem.Event) { lost.Add(1) }}))
		first := make(chan *httptest.ResponseRecorder)
		go func() { first <- h.post("k", `{}`) }()
		<-started
		second := h.post("k", `{}`) // waits (op.Wait) until the lease is stale, then takes over
		if second.Code != http.StatusCreated || second.Header().Get(idemop.HeaderReplayed) != "" {
			t.Fatalf("duplicate = %d %s", second.Code, second.Body)
		}
		close(release)
		orig := <-first
		if orig.Code != http.StatusCreated || orig.Body.String() != second.Body.String() || orig.Header().Get(idemop.HeaderReplayed) != "true" {
			t.Fatalf("first client = %d %s; want the second run's %s replayed", orig.Code, orig.Body, second.Body)
		}
		if i1, i2 := <-infos, <-infos; i1.Fence != 1 || i1.Recovered || i2.Fence != 2 || !i2.Recovered {
			t.Errorf("infos = %+v, %+v", i1, i2)
		}
		if lost.Load() != 1 {
			t.Errorf("lease lost reported %d times, want 1", lost.Load())
		}
		if w := h.post("k", `{}`); w.Body.String() != second.Body.String() {
			t.Errorf("stored %s, want the second run's %s", w.Body, second.Body)
		}
		h.wantRuns(2)
	})
}

// extendSignal wraps a store to report successful extensions.
type extendSignal struct {
	idemstore.Store
	n      atomic.Int64
	enough func()
}

func (s *extendSignal) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	err := s.Store.Extend(ctx, key, token, lease)
	if err == nil && s.n.Add(1) == 4 { // 4 x lock/3 > lock: past the original deadline
		s.enough()
	}
	return err
}

// TestRedisHeartbeat: with the heartbeat on, a handler outliving its first
// lease keeps it; a duplicate gets 409, not a takeover.
func TestRedisHeartbeat(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		extended, enough := onceSignal()
		started, start := onceSignal()
		release := make(chan struct{})
		es := &extendSignal{Store: store, enough: enough}
		h := newHarnessOn(t, es, idemop.Operation{Lock: 300 * time.Millisecond}, blockingFirst(start, release))
		done := make(chan struct{})
		go func() { defer close(done); h.post("k", `{}`) }()
		<-started
		<-extended
		checkProblem(t, h.post("k", `{}`), http.StatusConflict, idemop.CodeConflict)
		close(release)
		<-done
		h.wantRuns(1)
	})
}

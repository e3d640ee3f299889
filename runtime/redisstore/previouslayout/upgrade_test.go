package previouslayout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// previousLayout is the store as the previous version's engine used it:
// every record under its key of the previous layout (the names in full),
// with the fingerprint without the API identity, and no lookup of any
// other key.
type previousLayout struct {
	s   idemstore.Store
	api string
	op  string
}

// previousVersion is the options of a store that stands for a process of
// the previous version (or the version between the layouts), under prefix:
// one that does not look at previouslayout's window, as those versions did
// not.
func previousVersion(prefix string) []redisstore.Option {
	return []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil), redisstore.WithPreviousLayoutIgnored()}
}

func (p previousLayout) key(k string) string {
	_, scope, key, ok := idemstore.SplitRecordKey(k)
	if !ok {
		panic("not a record key: " + k)
	}
	return previouslayout.PreviousRecordKey(p.api, p.op, scope, key)
}

func (p previousLayout) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	req.Key, req.Fingerprint, req.Origin = p.key(req.Key), req.Origin.Request, nil
	return p.s.Acquire(ctx, req)
}

func (p previousLayout) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	return p.s.Complete(ctx, p.key(key), token, rec, retention)
}

func (p previousLayout) Release(ctx context.Context, key, token string) error {
	return p.s.Release(ctx, p.key(key), token)
}

func (p previousLayout) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	return p.s.Extend(ctx, p.key(key), token, lease)
}

// TestRetryAcrossKeyLayoutUpgrade: requests answered, or still running, on
// a process of the previous key layout are found by the processes of the
// current one: a retry is replayed (also 40 at once), another payload
// refused 422, a running one answered 409 and replayed once it completes;
// nothing runs twice. A new key runs once under the current layout. Once
// the window is over (the marker's time plus retention and rollout), the
// previous keys are no longer looked up.
func TestRetryAcrossKeyLayoutUpgrade(t *testing.T) {
	for _, b := range []struct {
		name string
		rdb  func(t *testing.T) *redis.Client
	}{
		{"redis", func(t *testing.T) *redis.Client { return redistest.Real(t) }},
		{"miniredis", func(t *testing.T) *redis.Client { _, rdb := embedredis.StartTB(t); return rdb }},
	} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			rdb := b.rdb(t)
			prefix := redistest.Prefix(t)
			op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders", Lock: time.Minute}
			var runs sync.Map // key -> *int
			var mu sync.Mutex
			block := make(chan struct{})
			started := make(chan struct{})
			handler := func(w http.ResponseWriter, r *http.Request) {
				k := r.Header.Get("Idempotency-Key")
				mu.Lock()
				n, _ := runs.LoadOrStore(k, new(int))
				*n.(*int)++
				mu.Unlock()
				if r.Header.Get("X-Block") != "" {
					close(started)
					<-block
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"order":"` + k + `"}`))
			}
			runsOf := func(k string) int {
				mu.Lock()
				defer mu.Unlock()
				if n, ok := runs.Load(k); ok {
					return *n.(*int)
				}
				return 0
			}
			serve := func(e *idem.Engine, key, body string, extra ...string) *httptest.ResponseRecorder {
				r := engineReq(http.MethodPost, "/orders", body, append([]string{"Idempotency-Key", key}, extra...)...)
				w := httptest.NewRecorder()
				e.Serve(w, r, &op, handler)
				return w
			}

			// The previous version: one request answered, one running.
			old := idem.NewEngine(previousLayout{redisstore.New(rdb, previousVersion(prefix)...), op.API, op.ID})
			if w := serve(old, "k-done", `{"n":1}`); w.Code != http.StatusCreated {
				t.Fatalf("previous version: %d %s", w.Code, w.Body)
			}
			busy := make(chan *httptest.ResponseRecorder, 1)
			go func() { busy <- serve(old, "k-busy", `{"n":2}`, "X-Block", "1") }()
			<-started

			// The upgrade: a process of the current layout, the migration on.
			store := previouslayout.New(rdb, 0, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
			cur := idem.NewEngine(store)
			w := serve(cur, "k-done", `{"n":1}`)
			if w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "true" || w.Body.String() != `{"order":"k-done"}` {
				t.Errorf("retry of a request answered before the upgrade: %d %v %s; want its replay", w.Code, w.Header(), w.Body)
			}
			if since, known := store.KeyLayoutSince(); !known || since.IsZero() {
				t.Errorf("KeyLayoutSince = %v, %v; want the time of the upgrade", since, known)
			}
			var wg sync.WaitGroup
			for range 40 {
				wg.Go(func() {
					if w := serve(cur, "k-done", `{"n":1}`); w.Code != http.StatusCreated && w.Code != http.StatusConflict {
						t.Errorf("concurrent retry: %d %s", w.Code, w.Body)
					}
				})
			}
			wg.Wait()
			if w := serve(cur, "k-done", `{"n":9}`); w.Code != http.StatusUnprocessableEntity {
				t.Errorf("another payload under a key answered before the upgrade: %d %s; want 422", w.Code, w.Body)
			}
			if w := serve(cur, "k-busy", `{"n":2}`); w.Code != http.StatusConflict {
				t.Errorf("retry of a request still running on the previous version: %d %s; want 409", w.Code, w.Body)
			}
			close(block)
			if w := <-busy; w.Code != http.StatusCreated {
				t.Fatalf("previous version's running request: %d %s", w.Code, w.Body)
			}
			if w := serve(cur, "k-busy", `{"n":2}`); w.Header().Get(idemop.HeaderReplayed) != "true" {
				t.Errorf("retry after the previous version completed: %d %v %s; want its replay", w.Code, w.Header(), w.Body)
			}
			if w := serve(cur, "k-new", `{"n":3}`); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
				t.Errorf("new key: %d %v", w.Code, w.Header())
			}
			if w := serve(cur, "k-new", `{"n":3}`); w.Header().Get(idemop.HeaderReplayed) != "true" {
				t.Errorf("retry of a new key: %d %v", w.Code, w.Header())
			}
			for _, k := range []string{"k-done", "k-busy", "k-new"} {
				if n := runsOf(k); n != 1 {
					t.Errorf("%s ran %d times, want once", k, n)
				}
			}
			if n, err := rdb.Exists(ctx, prefix+":"+idemstore.RecordKeyIn(op.API, op.ID, "", "k-new")).Result(); err != nil || n != 1 {
				t.Errorf("k-new under the current layout: exists %d, %v", n, err)
			}
			for _, k := range []string{"k-done", "k-busy", "k-new"} {
				n, err := rdb.Exists(ctx, prefix+":"+idemstore.RecordKeyIn(op.API, op.ID, "", k)).Result()
				if want := int64(map[bool]int{true: 1}[k == "k-new"]); err != nil || n != want {
					t.Errorf("%s under the current layout: exists %d, %v; want %d (a replay from the previous key leaves none)", k, n, err, want)
				}
			}

			// After the window: the marker's time further back than the
			// operation's retention plus the rollout.
			past := time.Now().Add(-idemop.DefaultRetention - previouslayout.Rollout - time.Hour).UnixMilli()
			if err := rdb.Set(ctx, prefix+":"+previouslayout.KeyLayoutMarker, past, 0).Err(); err != nil {
				t.Fatal(err)
			}
			later := idem.NewEngine(previouslayout.New(rdb, 0, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)))
			if w := serve(later, "k-done", `{"n":1}`); w.Header().Get(idemop.HeaderReplayed) != "" || runsOf("k-done") != 2 {
				t.Errorf("after the window: %d %v, k-done ran %d times; want a first run (the previous key not looked up)", w.Code, w.Header(), runsOf("k-done"))
			}
		})
	}
}

// TestKeyLayoutOfANewServer: a migrating store whose server held nothing
// when it first used it still starts the upgrade's window at the server's
// time, since processes of the previous version may write records there
// during the rollout (with marker 0, their records would never be
// looked up).
func TestKeyLayoutOfANewServer(t *testing.T) {
	_, rdb := embedredis.StartTB(t)
	store := previouslayout.New(rdb, 0, redisstore.WithLogger(nil))
	if _, known := store.KeyLayoutSince(); known {
		t.Error("KeyLayoutSince known before the store asked its server")
	}
	req := idemstore.AcquireRequest{Key: idemstore.RecordKeyIn("shop", "CreateOrder", "", "k"), Token: "t", Fingerprint: "f", Lease: time.Minute,
		Origin: &idemstore.Origin{API: "shop", Operation: "CreateOrder", Key: "k", Request: "g"}}
	if _, err := store.Acquire(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	since, known := store.KeyLayoutSince()
	if !known || since.IsZero() {
		t.Errorf("KeyLayoutSince = %v, %v; want the server's time, known", since, known)
	}
	v, err := rdb.Get(context.Background(), "idem:"+previouslayout.KeyLayoutMarker).Result()
	if err != nil || v != strconv.FormatInt(since.UnixMilli(), 10) {
		t.Errorf("marker %q, %v; want %d", v, err, since.UnixMilli())
	}
}

// TestNewDeploymentWritesOneLayout: the store a new deployment builds
// (redisstore.New) writes a first request's record under the current key
// alone, reads and writes no layout marker, and replays the retry from it;
// with the migration on (previouslayout.New), the same request on a new
// server writes both layouts (the rollout window) and the marker.
func TestNewDeploymentWritesOneLayout(t *testing.T) {
	for _, b := range []struct {
		name string
		rdb  func(t *testing.T) *redis.Client
	}{
		{"redis", func(t *testing.T) *redis.Client { return redistest.Real(t) }},
		{"miniredis", func(t *testing.T) *redis.Client { _, rdb := embedredis.StartTB(t); return rdb }},
	} {
		for _, migrating := range []bool{false, true} {
			name := b.name + map[bool]string{false: "/redisstore.New", true: "/previouslayout.New"}[migrating]
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				rdb := b.rdb(t)
				prefix := redistest.Prefix(t)
				opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithLogger(nil)}
				var store idemstore.Store = redisstore.New(rdb, opts...)
				if migrating {
					store = previouslayout.New(rdb, 0, opts...)
				}
				op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders", Lock: time.Minute}
				runs := 0
				e := idem.NewEngine(store)
				serve := func() *httptest.ResponseRecorder {
					w := httptest.NewRecorder()
					e.Serve(w, engineReq(http.MethodPost, "/orders", `{"n":1}`, "Idempotency-Key", "k-1"), &op, func(w http.ResponseWriter, _ *http.Request) {
						runs++
						w.WriteHeader(http.StatusCreated)
					})
					return w
				}
				if w := serve(); w.Code != http.StatusCreated {
					t.Fatalf("first request: %d %s", w.Code, w.Body)
				}
				if w := serve(); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "true" {
					t.Errorf("retry: %d, replayed %q; want the replay", w.Code, w.Header().Get(idemop.HeaderReplayed))
				}
				if runs != 1 {
					t.Errorf("the handler ran %d times, want 1", runs)
				}
				cur := prefix + ":" + idemstore.RecordKeyIn("shop", "CreateOrder", "", "k-1")
				prev := prefix + ":" + previouslayout.PreviousRecordKey("shop", "CreateOrder", "", "k-1")
				marker := prefix + ":" + previouslayout.KeyLayoutMarker
				for _, k := range []struct {
					key  string
					want bool
				}{{cur, true}, {prev, migrating}, {marker, migrating}} {
					if n, err := rdb.Exists(ctx, k.key).Result(); err != nil || (n == 1) != k.want {
						t.Errorf("%s exists: %d, %v; want %v", k.key, n, err, k.want)
					}
				}
			})
		}
	}
}

package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// TestCompletionSurvivesScriptsDenied: the scripts are denied from just
// before the handler answers until its first completion attempt has failed
// (well under a second); completion is retried and stores the result, the
// client gets it unmarked, and a retry after the lease is a replay: the
// handler ran once. Denied for longer than the lease, the client gets its
// answer marked Idempotency-Degraded, the Unstored hook gets the response,
// and a retry once the lease lapsed runs the handler again as a recovered
// lease (the reconciler first), as docs/http.md says.
func TestCompletionSurvivesScriptsDenied(t *testing.T) {
	srv := configuredServer(t)
	admin := faultClient(t, srv.Addr())
	allow := []string{"reset", "on", ">" + appPass, "~*", "&*", "+@all"}
	aclSet(t, admin, allow...)
	rdb := appClient(t, srv.Addr())

	t.Run("blip", func(t *testing.T) {
		completionBlip(t, redisstore.New(rdb, redisstore.WithPrefix("blip")),
			func() { aclSet(t, admin, "-eval", "-evalsha") },
			func() { aclSet(t, admin, "+eval", "+evalsha") })
	})

	t.Run("longer than the lease", func(t *testing.T) {
		aclSet(t, admin, allow...)
		op := faultOp
		op.Lock = time.Second
		var mu sync.Mutex // guards unstored, reconciled
		var unstored []idem.Event
		var unstoredInfo idem.Info
		reconciled := 0
		hooks := idem.Hooks{Unstored: func(ctx context.Context, ev idem.Event) {
			mu.Lock()
			defer mu.Unlock()
			unstored = append(unstored, ev)
			unstoredInfo, _ = idem.FromContext(ctx)
		}}
		runs := newFaultRuns()
		eng := idem.NewEngine(redisstore.New(rdb, redisstore.WithPrefix("unstored")), idem.WithHooks(hooks),
			idem.WithStoreTimeout(200*time.Millisecond),
			idem.WithReconciler(func(context.Context, idem.Info, *http.Request) error {
				mu.Lock()
				defer mu.Unlock()
				reconciled++
				return nil
			}))
		h := eng.Middleware(op)(faultHandler(runs, func(key string, fence int64) {
			if fence == 1 {
				aclSet(t, admin, "-eval", "-evalsha")
			}
		}))
		w := faultPost(h, "order-2")
		if w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderDegraded) != "true" {
			t.Fatalf("answer %d degraded=%q %s; want 201 marked Idempotency-Degraded", w.Code, w.Header().Get(idemop.HeaderDegraded), w.Body)
		}
		mu.Lock()
		if len(unstored) != 1 || unstored[0].Response == nil || string(unstored[0].Response.Body) != w.Body.String() ||
			unstored[0].Status != http.StatusCreated || unstoredInfo.Key != "order-2" || unstoredInfo.Fence != 1 {
			t.Errorf("Unstored hook: %+v (info %+v); want once, with the 201 the client got, key order-2, fence 1", unstored, unstoredInfo)
		}
		mu.Unlock()
		aclSet(t, admin, "+eval", "+evalsha")
		// Until the store verifies the scripts again (within a second of
		// the NOPERM) it refuses new acquires; then 409 until the lease
		// lapses.
		var w2 *httptest.ResponseRecorder
		faultEventually(t, 15*time.Second, "a retry that runs", func() bool {
			w2 = faultPost(h, "order-2")
			return w2.Code != http.StatusConflict && faultCode(w2) != idemop.CodeStoreMisconfigured
		})
		if w2.Code != http.StatusCreated || faultDecode(t, w2).Fence != 2 {
			t.Fatalf("retry after the lease lapsed: %d %s; want 201, run again with fence 2", w2.Code, w2.Body)
		}
		mu.Lock()
		if reconciled != 1 {
			t.Errorf("reconciler ran %d times, want 1", reconciled)
		}
		mu.Unlock()
		if n := runs.of("order-2"); n != 2 {
			t.Errorf("handler ran %d times, want 2 (the unstored run and the recovered one)", n)
		}
	})
}

// faultAnswerRec is a recorded answer passed between goroutines.
type faultAnswerRec struct {
	code   int
	header http.Header
	body   string
}

// completionBlip runs one request through an engine on store whose handler
// calls deny just before it answers; allow is called once a completion
// attempt has failed. The result must be stored all the same, its client
// answered normally, and a retry after the lease must be its replay.
func completionBlip(t *testing.T, store idemstore.Store, deny, allow func()) {
	t.Helper()
	op := faultOp
	op.Lock = 2 * time.Second
	failed := make(chan struct{}, 1)
	var mu sync.Mutex // guards completed, unstored
	completed, unstored := 0, 0
	hooks := idem.Hooks{
		StoreError: func(_ context.Context, ev idem.Event) {
			var se *idemstore.StoreError
			if errors.As(ev.Err, &se) && se.Op == "complete" {
				select {
				case failed <- struct{}{}:
				default:
				}
			}
		},
		Completed: func(context.Context, idem.Event) { mu.Lock(); completed++; mu.Unlock() },
		Unstored:  func(context.Context, idem.Event) { mu.Lock(); unstored++; mu.Unlock() },
	}
	runs := newFaultRuns()
	eng := idem.NewEngine(store, idem.WithHooks(hooks))
	h := eng.Middleware(op)(faultHandler(runs, func(string, int64) {
		deny() // the handler has run; completion will be denied
	}))
	start := time.Now()
	answer := make(chan *faultAnswerRec, 1)
	go func() { w := faultPost(h, "order-1"); answer <- &faultAnswerRec{w.Code, w.Header(), w.Body.String()} }()
	faultWait(t, failed, 10*time.Second, "a completion attempt denied")
	allow()
	w := faultWait(t, answer, 10*time.Second, "the answer")
	if w.code != http.StatusCreated || w.header.Get(idemop.HeaderDegraded) != "" {
		t.Fatalf("answer %d degraded=%q %s; want 201, stored", w.code, w.header.Get(idemop.HeaderDegraded), w.body)
	}
	mu.Lock()
	if completed != 1 || unstored != 0 {
		t.Errorf("Completed %d, Unstored %d; want 1 and 0", completed, unstored)
	}
	mu.Unlock()
	// A retry after the lease would have lapsed is a replay.
	<-time.After(time.Until(start.Add(op.Lock + 100*time.Millisecond)))
	retry := faultPost(h, "order-1")
	if retry.Code != http.StatusCreated || retry.Header().Get(idemop.HeaderReplayed) != "true" || retry.Body.String() != w.body {
		t.Errorf("retry after the lease: %d replayed=%q %s; want the stored 201", retry.Code, retry.Header().Get(idemop.HeaderReplayed), retry.Body)
	}
	if n := runs.of("order-1"); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
}

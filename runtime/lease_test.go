package idem_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// signal returns a channel closed by the first call of the returned func.
func onceSignal() (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// blockingFirst is a handler whose first run closes started and waits for
// release; later runs answer at once.
func blockingFirst(started func(), release <-chan struct{}) func(h *harness, w http.ResponseWriter, r *http.Request) {
	return func(h *harness, w http.ResponseWriter, r *http.Request) {
		if h.runs.Load() == 1 {
			started()
			<-release
		}
		createHandler(h, w, r)
	}
}

func TestWaitForOriginal(t *testing.T) {
	started, start := onceSignal()
	release := make(chan struct{})
	conflicted, conflict := onceSignal()
	h := newHarness(t, idemop.Operation{Wait: time.Minute}, blockingFirst(start, release))
	h.store.onAcquire = func(acq idemstore.Acquisition) {
		if acq.Outcome == idemstore.OutcomeConflict {
			conflict()
		}
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- h.post("k", `{}`) }()
	<-started
	dup := make(chan *httptest.ResponseRecorder)
	go func() { dup <- h.post("k", `{}`) }()
	<-conflicted // the duplicate is waiting now
	close(release)
	orig, w := <-first, <-dup
	if w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "true" || w.Body.String() != orig.Body.String() {
		t.Fatalf("duplicate = %d %s, want the original's replay", w.Code, w.Body)
	}
	h.wantRuns(1)
}

func TestWaitEndsWithContext(t *testing.T) {
	started, start := onceSignal()
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	h := newHarness(t, idemop.Operation{Wait: time.Hour}, blockingFirst(start, release))
	h.store.onAcquire = func(acq idemstore.Acquisition) {
		if acq.Outcome == idemstore.OutcomeConflict {
			cancel()
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); h.post("k", `{}`) }()
	<-started
	w := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k").WithContext(ctx))
	checkProblem(t, w, http.StatusConflict, idemop.CodeConflict)
	close(release)
	<-done
}

// TestTakeover: a handler outlives its lease (no heartbeat); a retry takes
// the record over with fence 2 and its result wins; the first worker's late
// completion is refused, and its own client gets the stored fence 2 result
// (replayed), not the stale one.
func TestTakeover(t *testing.T) {
	started, start := onceSignal()
	release := make(chan struct{})
	var lost, reconciled atomic.Int64
	infos := make(chan idem.Info, 2)
	h := newHarness(t, idemop.Operation{Lock: time.Second}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		info, _ := idem.FromContext(r.Context())
		infos <- info
		blockingFirst(start, release)(h, w, r)
	},
		idem.WithHeartbeat(false),
		idem.WithHooks(idem.Hooks{LeaseLost: func(context.Context, idem.Event) { lost.Add(1) }}),
		idem.WithReconciler(func(ctx context.Context, info idem.Info, r *http.Request) error {
			if got, _ := idem.FromContext(ctx); !info.Recovered || info.Fence != 2 || got != info || r == nil {
				t.Errorf("reconciler got %+v (context %+v, request %v)", info, got, r != nil)
			}
			reconciled.Add(1)
			return nil
		}),
	)
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- h.post("k", `{}`) }()
	<-started
	h.store.advance(2 * time.Second) // the first lease is past its deadline
	second := h.post("k", `{}`)
	if second.Code != http.StatusCreated || second.Header().Get(idemop.HeaderReplayed) != "" {
		t.Fatalf("takeover = %d %s", second.Code, second.Body)
	}
	close(release)
	orig := <-first
	if orig.Code != http.StatusCreated || orig.Body.String() != second.Body.String() || orig.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("the first client's answer = %d %s; want the fence 2 result replayed: %s", orig.Code, orig.Body, second.Body)
	}
	if i1, i2 := <-infos, <-infos; i1.Fence != 1 || i1.Recovered || i2.Fence != 2 || !i2.Recovered || i2.Key != "k" {
		t.Errorf("infos = %+v, %+v", i1, i2)
	}
	if lost.Load() != 1 || reconciled.Load() != 1 {
		t.Errorf("lease lost %d times, reconciled %d times; want 1, 1", lost.Load(), reconciled.Load())
	}
	third := h.post("k", `{}`)
	if third.Body.String() != second.Body.String() || third.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Errorf("stored = %s, want the second run's %s", third.Body, second.Body)
	}
	h.wantRuns(2)
}

func TestReconcilerError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"plain error", errors.New("ledger unreachable"), http.StatusServiceUnavailable, idemop.CodeReconcileFailed},
		{"problem", idem.NewProblem(http.StatusConflict, "already-paid", "the payment exists"), http.StatusConflict, "already-paid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, idemop.Operation{Lock: time.Second}, nil, idem.WithHeartbeat(false),
				idem.WithReconciler(func(context.Context, idem.Info, *http.Request) error { return tc.err }))
			key := idemstore.RecordKey("CreatePet", "", "k")
			// A worker died holding the lease of the same request.
			fp := fingerprintOf(t, h, engineReq("POST", "/pets", `{}`))
			if _, err := h.store.Acquire(context.Background(), idemstore.AcquireRequest{Key: key, Token: "dead", Fingerprint: fp, Lease: time.Second}); err != nil {
				t.Fatal(err)
			}
			h.store.advance(2 * time.Second)
			checkProblem(t, h.post("k", `{}`), tc.status, tc.code)
			h.wantRuns(0)
			if _, ok := h.store.get(key); ok {
				t.Error("the recovered lease was not released")
			}
		})
	}
}

// fingerprintOf returns the fingerprint the harness computes for r.
func fingerprintOf(t *testing.T, h *harness, r *http.Request) string {
	t.Helper()
	r.Header.Set("Idempotency-Key", "k")
	fp, prob := h.eng.Fingerprint(r, h.op)
	if prob != nil {
		t.Fatal(prob)
	}
	return fp
}

func TestHeartbeatKeepsLease(t *testing.T) {
	extended, extendedEnough := onceSignal()
	var extends atomic.Int64
	started, start := onceSignal()
	release := make(chan struct{})
	h := newHarness(t, idemop.Operation{Lock: 300 * time.Millisecond}, blockingFirst(start, release))
	h.store.onExtend = func() {
		if extends.Add(1) == 4 { // 4 x lock/3 > lock: the lease would have expired
			extendedEnough()
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); h.post("k", `{}`) }()
	<-started
	<-extended
	checkProblem(t, h.post("k", `{}`), http.StatusConflict, idemop.CodeConflict)
	close(release)
	<-done
	n := h.store.count("extend")
	if w := h.post("k", `{}`); w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("not replayed: %d", w.Code)
	}
	if h.store.count("extend") != n {
		t.Error("the heartbeat outlived the handler")
	}
	h.wantRuns(1)
}

func (w storedFirstWriter) WriteHeader(code int) {
	if rec, ok := w.store.get(w.key); !ok || !rec.completed {
		w.t.Error("the response was written before it was stored")
	}
	w.ResponseRecorder.WriteHeader(code)
}

// TestTakeoverWhileNewerRuns: the stale owner finishes while the run that
// took its lease over still runs: its client gets 409 with Retry-After (its
// retry will get the newer run's result), not its own stale result; and
// once the newer run completes, that result is what everyone gets.
func TestTakeoverWhileNewerRuns(t *testing.T) {
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	started := make(chan int64, 2)
	h := newHarness(t, idemop.Operation{Lock: time.Second}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		n := h.runs.Load()
		started <- n
		<-gates[n-1]
		createHandler(h, w, r)
	}, idem.WithHeartbeat(false))
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- h.post("k", `{}`) }()
	<-started
	h.store.advance(2 * time.Second)
	second := make(chan *httptest.ResponseRecorder)
	go func() { second <- h.post("k", `{}`) }()
	<-started
	close(gates[0])
	orig := <-first
	checkProblem(t, orig, http.StatusConflict, idemop.CodeConflict)
	if s := retryAfterSeconds(t, orig); s < 1 {
		t.Errorf("Retry-After = %d", s)
	}
	close(gates[1])
	newer := <-second
	if newer.Code != http.StatusCreated || !strings.Contains(newer.Body.String(), `"fence":2`) {
		t.Fatalf("newer run = %d %s", newer.Code, newer.Body)
	}
	if w := h.post("k", `{}`); w.Body.String() != newer.Body.String() || w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Errorf("retry = %d %s; want the newer run's result replayed", w.Code, w.Body)
	}
	h.wantRuns(2)
}

// TestTakeoverRecordGone: the stale owner's completion is refused and the
// record is gone by then (the newer run failed and released it): the client
// gets 409, and the lease taken to find out is released at once, so the
// retry runs.
func TestTakeoverRecordGone(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := newHarness(t, idemop.Operation{Lock: time.Second}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if h.runs.Load() == 1 {
			started <- struct{}{}
			<-release
			createHandler(h, w, r)
			return
		}
		w.WriteHeader(http.StatusInternalServerError) // not stored: releases
	}, idem.WithHeartbeat(false))
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- h.post("k", `{}`) }()
	<-started
	h.store.advance(2 * time.Second)
	if w := h.post("k", `{}`); w.Code != http.StatusInternalServerError {
		t.Fatalf("takeover = %d %s", w.Code, w.Body)
	}
	close(release)
	checkProblem(t, <-first, http.StatusConflict, idemop.CodeConflict)
	if w := h.post("k", `{}`); w.Code != http.StatusInternalServerError || h.runs.Load() != 3 {
		t.Errorf("retry = %d after %d runs; want it to run (500)", w.Code, h.runs.Load())
	}
}

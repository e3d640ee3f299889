package idem_test

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// liveTxStore is a memTxStore whose runs are idemstore.LiveRunTx: each
// KeepAlive is counted and signalled, and answers what lost says.
type liveTxStore struct {
	*memTxStore
	live bool // AcquireRun returns a LiveRunTx
	kept atomic.Int64
	beat chan struct{} // a KeepAlive ended (buffered)
	lost atomic.Bool   // KeepAlive answers ErrNotOwner
}

// liveMemTx is a live run's transaction; plainMemTx the same without
// KeepAlive, allocated alike, so that the two differ only by the engine's
// work.
type liveMemTx struct{ plainMemTx }

type plainMemTx struct {
	memTx
	s *liveTxStore
}

func (t *liveMemTx) KeepAlive(context.Context) error {
	t.s.kept.Add(1)
	defer func() { t.s.beat <- struct{}{} }()
	if t.s.lost.Load() {
		return idemstore.ErrNotOwner
	}
	return nil
}

func (s *liveTxStore) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, tx, err := s.memTxStore.AcquireRun(ctx, req)
	switch {
	case tx == nil:
		return acq, nil, err
	case !s.live:
		return acq, &plainMemTx{memTx: *tx.(*memTx), s: s}, nil
	}
	return acq, &liveMemTx{plainMemTx{memTx: *tx.(*memTx), s: s}}, nil
}

func newLiveTxStore(live bool) *liveTxStore {
	return &liveTxStore{memTxStore: &memTxStore{memStore: newMemStore()}, live: live, beat: make(chan struct{}, 1000)}
}

// liveServer serves s with an operation whose lock is lock and handler h.
func liveServer(s *liveTxStore, lock time.Duration, h http.HandlerFunc, opts ...idem.Option) http.Handler {
	e := idem.NewEngine(s, opts...)
	op := &idemop.Operation{ID: "pay", Method: http.MethodPost, Path: "/pay", KeyHeader: "Idempotency-Key", Lock: lock}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, op, h) })
}

// TestLiveRunKeptAliveWhileTheHandlerRuns: a handler that runs past a third
// of its lock has its run kept alive (KeepAlive, as the heartbeat extends a
// lease) until it returns, and its answer is committed; none comes after.
func TestLiveRunKeptAliveWhileTheHandlerRuns(t *testing.T) {
	s := newLiveTxStore(true)
	h := liveServer(s, 30*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		for range 3 {
			<-s.beat // three keep-alives while the handler runs
		}
		write(r.Context(), "payment")
		w.WriteHeader(http.StatusCreated)
	})
	if rec := txPost(h, "k"); rec.Code != http.StatusCreated {
		t.Fatalf("answered %d %s", rec.Code, rec.Body)
	}
	after := s.kept.Load()
	if after < 3 || len(s.committed) != 1 {
		t.Fatalf("%d keep-alives, committed %v; want at least 3 and the run's write", after, s.committed)
	}
	if rec := txPost(h, "k"); rec.Code != http.StatusCreated || s.kept.Load() != after {
		t.Fatalf("the replay: %d, keep-alives %d -> %d", rec.Code, after, s.kept.Load())
	}
}

// TestLiveRunLostStopsTheKeepAlive: a keep-alive that finds the claim lost
// (the server ended the transaction) is reported once (LeaseLost) and not
// repeated; the run's commit is then refused as before.
func TestLiveRunLostStopsTheKeepAlive(t *testing.T) {
	s := newLiveTxStore(true)
	s.lost.Store(true)
	var lostEvents atomic.Int64
	hooks := idem.Hooks{LeaseLost: func(context.Context, idem.Event) { lostEvents.Add(1) }}
	h := liveServer(s, 30*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		<-s.beat // the keep-alive that found the claim lost
		// The handler then runs for ten beats' time: a keep-alive that
		// went on would come meanwhile.
		time.Sleep(100 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	}, idem.WithHooks(hooks))
	txPost(h, "k")
	if n := s.kept.Load(); n != 1 || lostEvents.Load() < 1 {
		t.Fatalf("%d keep-alives, %d LeaseLost events; want 1 and at least 1", n, lostEvents.Load())
	}
}

// TestShortRunCostsNoKeepAlive: a request that ends before a third of its
// lock sends no keep-alive and allocates nothing more than the same request
// on a store whose runs need none.
func TestShortRunCostsNoKeepAlive(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }
	allocs := map[bool]float64{}
	for _, live := range []bool{false, true} {
		s := newLiveTxStore(live)
		h := liveServer(s, time.Hour, ok)
		n := 0
		allocs[live] = testing.AllocsPerRun(200, func() {
			n++
			if rec := txPost(h, "k"+strconv.Itoa(n)); rec.Code != http.StatusCreated {
				t.Fatalf("answered %d", rec.Code)
			}
		})
		if got := s.kept.Load(); got != 0 {
			t.Fatalf("live %v: %d keep-alives for requests far shorter than the lock", live, got)
		}
	}
	if !raceEnabled && allocs[true] > allocs[false] {
		t.Fatalf("a first request allocates %.1f with a live run, %.1f without", allocs[true], allocs[false])
	}
	t.Logf("allocations per first request: %.1f with a live run, %.1f without", allocs[true], allocs[false])
}

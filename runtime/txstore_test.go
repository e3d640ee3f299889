package idem_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// memTxStore is a memStore that is an idemstore.TxStore: a run's "writes" are
// kept in its transaction and become visible (committed) only with the
// completion. Its claim is memStore's lease, which a rollback releases and
// a lapse (advance) ends, as a store ends a frozen owner's transaction. Its
// failures are set per test.
type memTxStore struct {
	*memStore
	mu        sync.Mutex
	committed []string // the writes of committed runs
	rolled    int      // transactions rolled back
	claimErr  error    // AcquireRun fails with it
	commitErr error    // Commit fails with it (after which the run is not committed)
}

type memTx struct {
	s      *memTxStore
	key    string
	token  string
	writes []string
	done   bool
}

type memTxKey struct{}

// write is a handler's write in its run's transaction.
func write(ctx context.Context, w string) {
	tx := ctx.Value(memTxKey{}).(*memTx)
	tx.writes = append(tx.writes, w)
}

func (s *memTxStore) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	if s.claimErr != nil {
		return idemstore.Acquisition{}, nil, s.claimErr
	}
	acq, err := s.Acquire(ctx, req)
	if err != nil || (acq.Outcome != idemstore.OutcomeFirstRun && acq.Outcome != idemstore.OutcomeRecovered) {
		return acq, nil, err
	}
	return acq, &memTx{s: s, key: req.Key, token: req.Token}, nil
}

func (t *memTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, memTxKey{}, t)
}

func (t *memTx) Commit(ctx context.Context, rec *idemstore.Record, retention time.Duration) error {
	t.done = true
	if t.s.commitErr != nil {
		t.s.mu.Lock()
		t.s.rolled++
		t.s.mu.Unlock()
		_ = t.s.Release(ctx, t.key, t.token) // not committed: the claim ends with the transaction
		return t.s.commitErr
	}
	if err := t.s.Complete(ctx, t.key, t.token, rec, retention); err != nil {
		t.s.mu.Lock()
		t.s.rolled++
		t.s.mu.Unlock()
		_ = t.s.Release(ctx, t.key, t.token)
		return err
	}
	t.s.mu.Lock()
	t.s.committed = append(t.s.committed, t.writes...)
	t.s.mu.Unlock()
	return nil
}

func (t *memTx) Rollback(ctx context.Context) error {
	if !t.done {
		t.done = true
		t.s.mu.Lock()
		t.s.rolled++
		t.s.mu.Unlock()
		_ = t.s.Release(ctx, t.key, t.token) // the claim ends with the transaction
	}
	return nil
}

func txServer(s *memTxStore, h http.HandlerFunc, opts ...idem.Option) http.Handler {
	e := idem.NewEngine(s, opts...)
	op := &idemop.Operation{ID: "pay", Method: http.MethodPost, Path: "/pay", KeyHeader: "Idempotency-Key"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, op, h) })
}

func txPost(h http.Handler, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(`{}`))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestTxStoreCommitsWritesWithTheResult(t *testing.T) {
	s := &memTxStore{memStore: newMemStore()}
	runs := 0
	h := txServer(s, func(w http.ResponseWriter, r *http.Request) {
		runs++
		write(r.Context(), "payment")
		w.WriteHeader(http.StatusCreated)
	})
	for range 2 {
		if rec := txPost(h, "k"); rec.Code != http.StatusCreated {
			t.Fatalf("status %d", rec.Code)
		}
	}
	if runs != 1 || len(s.committed) != 1 || s.rolled != 0 {
		t.Fatalf("runs %d, committed %v, rolled back %d; want one committed run", runs, s.committed, s.rolled)
	}
}

func TestTxStoreRollsBackUnstoredRuns(t *testing.T) {
	s := &memTxStore{memStore: newMemStore()}
	h := txServer(s, func(w http.ResponseWriter, r *http.Request) {
		write(r.Context(), "payment")
		w.WriteHeader(http.StatusBadGateway)
	})
	if rec := txPost(h, "k"); rec.Code != http.StatusBadGateway {
		t.Fatalf("status %d, want the handler's 502", rec.Code)
	}
	if len(s.committed) != 0 || s.rolled != 1 || len(s.keys()) != 0 {
		t.Fatalf("committed %v, rolled back %d, records %v; want a rollback that leaves nothing", s.committed, s.rolled, s.keys())
	}
}

// TestTxStoreClaimFails: no claim, no run: 503, and nothing is left, so
// that the retry runs at once.
func TestTxStoreClaimFails(t *testing.T) {
	s := &memTxStore{memStore: newMemStore(), claimErr: &idemstore.StoreError{Op: "acquire", Err: errStoreDown}}
	runs := 0
	h := txServer(s, func(w http.ResponseWriter, r *http.Request) { runs++ })
	rec := txPost(h, "k")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "store-unavailable") || runs != 0 {
		t.Fatalf("status %d %s after %d runs; want 503 store-unavailable, no run", rec.Code, rec.Body, runs)
	}
	if len(s.keys()) != 0 {
		t.Fatalf("records %v left, want none", s.keys())
	}
}

// TestTxStoreCompletionFails: a completion that did not commit is never
// answered as if it had, nor as a 409 for a run that nothing holds: each
// cause is a 5xx whose code names it, logged, with nothing stored and the
// key free, so that the retry runs (and commits) at once.
func TestTxStoreCompletionFails(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter bool
	}{
		{"store down", &idemstore.StoreError{Op: "commit", Err: errStoreDown}, http.StatusServiceUnavailable, idemop.CodeStoreCompletionFailed, true},
		{"refused by the table", &idemstore.StoreError{Op: "complete", Err: refusal{}}, http.StatusInternalServerError, idemop.CodeStoreCompletionFailed, false},
		{"claim gone, key free", idemstore.ErrNotOwner, http.StatusServiceUnavailable, idemop.CodeStoreCompletionFailed, true},
		{"handler ended the transaction", fmt.Errorf("commit: %w", idemstore.ErrTxEnded), http.StatusInternalServerError, idemop.CodeTransactionEnded, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &memTxStore{memStore: newMemStore(), commitErr: c.err}
			var logs strings.Builder
			h := txServer(s, func(w http.ResponseWriter, r *http.Request) {
				write(r.Context(), "payment")
				w.WriteHeader(http.StatusCreated)
			}, idem.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			rec := txPost(h, "k")
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`) || (rec.Header().Get("Retry-After") != "") != c.retryAfter {
				t.Fatalf("%d %s (Retry-After %q); want %d %s, Retry-After %v", rec.Code, rec.Body, rec.Header().Get("Retry-After"), c.status, c.code, c.retryAfter)
			}
			if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), c.err.Error()) {
				t.Errorf("log %q; want an error naming %q", logs.String(), c.err)
			}
			if len(s.committed) != 0 || len(s.keys()) != 0 {
				t.Fatalf("committed %v, records %v; want nothing", s.committed, s.keys())
			}
			s.commitErr = nil
			if rec := txPost(h, "k"); rec.Code != http.StatusCreated || len(s.committed) != 1 {
				t.Fatalf("retry: %d, committed %v", rec.Code, s.committed)
			}
		})
	}
}

// refusal is a store's refusal of a statement for how it is set up.
type refusal struct{}

func (refusal) Error() string        { return "misconfigured: a CHECK constraint refused the record" }
func (refusal) Is(target error) bool { return target == idemstore.ErrStoreMisconfigured }

// TestTxStoreStaleOwner: the run whose claim was ended (a frozen owner's,
// taken over) has its commit refused, and its client gets the newer run's
// answer.
func TestTxStoreStaleOwner(t *testing.T) {
	s := &memTxStore{memStore: newMemStore()}
	inside, resume := make(chan struct{}), make(chan struct{})
	first := true
	var mu sync.Mutex
	h := txServer(s, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stale := first
		first = false
		mu.Unlock()
		write(r.Context(), "payment")
		if stale {
			close(inside)
			<-resume
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte("stale"))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("newer"))
	})
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- txPost(h, "k") }()
	<-inside
	s.advance(time.Hour) // the stale run's claim is ended
	if rec := txPost(h, "k"); rec.Body.String() != "newer" {
		t.Fatalf("takeover answered %d %s", rec.Code, rec.Body)
	}
	close(resume)
	rec := <-done
	if rec.Code != http.StatusCreated || rec.Body.String() != "newer" {
		t.Fatalf("the stale run's client got %d %s, want the newer run's answer", rec.Code, rec.Body)
	}
	if len(s.committed) != 1 || s.rolled != 1 {
		t.Fatalf("committed %v, rolled back %d; want the newer run only", s.committed, s.rolled)
	}
}

// TestTxStoreKeepsARunWhoseClientLeft: the client gives up (its request's
// context ends) while the handler runs; the handler answers all the same,
// and that answer is committed with its writes, so that the client's retry
// is a replay rather than a second run. A handler that returns because of
// the cancellation (an error) is rolled back.
func TestTxStoreKeepsARunWhoseClientLeft(t *testing.T) {
	s := &memTxStore{memStore: newMemStore()}
	var runs int
	h := txServer(s, func(w http.ResponseWriter, r *http.Request) {
		runs++
		r.Context().Value(clientLeaves{}).(context.CancelFunc)() // the client's timeout, mid-run
		<-r.Context().Done()
		write(r.Context(), "payment")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("paid"))
	})
	post := func(leave bool) *httptest.ResponseRecorder {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(`{}`)).WithContext(context.WithValue(ctx, clientLeaves{}, context.CancelFunc(func() {
			if leave {
				cancel()
			}
		})))
		req.Header.Set("Idempotency-Key", "k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	post(true)
	if len(s.committed) != 1 || s.rolled != 0 {
		t.Fatalf("committed %v, rolled back %d; want the run's write committed", s.committed, s.rolled)
	}
	if rec := post(false); rec.Code != http.StatusCreated || rec.Body.String() != "paid" || runs != 1 {
		t.Fatalf("the retry = %d %q after %d runs; want the replay of one run", rec.Code, rec.Body, runs)
	}
}

// clientLeaves is the context key of the test's way to end its request's
// context from inside the handler, as a client's timeout would.
type clientLeaves struct{}

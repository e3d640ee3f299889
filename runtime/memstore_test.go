package idem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
	"github.com/idemgen/idemgen/runtime/internal/memhooks"
)

// memStore is the engine tests' store: the reference in-memory store
// (memstore, which passes the conformance suite) seen through what the
// tests need of it: its calls counted, a failure injected into every call,
// a clock moved forward to expire leases without waiting, and hooks after
// the transitions. It is a plain idemstore.Store: it hides memstore's step
// journal, so the engine sees a store without one.
type memStore struct {
	s *memstore.Store

	mu    sync.Mutex     // protects every field below
	skew  time.Duration  // added to the wall clock
	err   error          // when set, every call fails with it
	calls map[string]int // calls per method

	// Set before use, called after each successful transition.
	onAcquire func(idemstore.Acquisition)
	onExtend  func()
}

// memRec is what the store holds under a key.
type memRec struct {
	token       string
	fingerprint string
	fence       int64
	deadline    time.Time // of the lease, while in progress
	completed   bool
	record      *idemstore.Record
	expires     time.Time // of the completed record
}

func newMemStore() *memStore {
	m := &memStore{calls: map[string]int{}}
	m.s = memstore.New(memstore.WithClock(m.now))
	return m
}

var errStoreDown = errors.New("memstore: connection refused")

// setErr makes every call fail with err (nil heals the store).
func (s *memStore) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// advance moves the store's clock forward by d.
func (s *memStore) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew += d
}

// now is the store's clock.
func (s *memStore) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Add(s.skew)
}

func (s *memStore) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// get returns what the store holds under key.
func (s *memStore) get(key string) (memRec, bool) {
	e, ok := memhooks.Lookup(s.s, key)
	if !ok {
		return memRec{}, false
	}
	r := memRec{token: e.Token, fingerprint: e.Fingerprint, fence: e.Fence, completed: e.Completed, record: e.Record}
	if e.Completed {
		r.expires = e.Until
	} else {
		r.deadline = e.Until
	}
	return r, true
}

// keys returns the storage keys the store holds.
func (s *memStore) keys() []string { return s.s.Keys() }

// enter counts a call of method and returns the injected failure.
func (s *memStore) enter(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	return s.err
}

func (s *memStore) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	if err := s.enter("acquire"); err != nil {
		return idemstore.Acquisition{}, err
	}
	acq, err := s.s.Acquire(ctx, req)
	if err == nil && s.onAcquire != nil {
		s.onAcquire(acq)
	}
	return acq, err
}

func (s *memStore) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	if err := s.enter("complete"); err != nil {
		return err
	}
	return s.s.Complete(ctx, key, token, rec, retention)
}

func (s *memStore) Release(ctx context.Context, key, token string) error {
	if err := s.enter("release"); err != nil {
		return err
	}
	return s.s.Release(ctx, key, token)
}

func (s *memStore) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	if err := s.enter("extend"); err != nil {
		return err
	}
	err := s.s.Extend(ctx, key, token, lease)
	if err == nil && s.onExtend != nil {
		s.onExtend()
	}
	return err
}

// forEachStore runs test on the store of the engine's tests, the reference
// store, in a subtest (runtime/redisstore/e2e runs the same tests on
// miniredis and real Redis).
func forEachStore(t *testing.T, test func(t *testing.T, store idemstore.Store)) {
	t.Run("memstore", func(t *testing.T) { test(t, memstore.New()) })
}

package idem_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// memStore is an in-memory Store with the transitions of lua/*.lua, for
// fast engine tests and benchmarks. Its clock can be replaced to expire
// leases without waiting.
type memStore struct {
	mu    sync.Mutex // protects every field below
	recs  map[string]*memRec
	skew  time.Duration  // added to the wall clock
	err   error          // when set, every call fails with it
	calls map[string]int // calls per method

	// Set before use, called outside mu after each successful transition.
	onAcquire func(idemstore.Acquisition)
	onExtend  func()
}

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
	return &memStore{recs: map[string]*memRec{}, calls: map[string]int{}}
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

// now is the store's clock. Callers hold mu.
func (s *memStore) now() time.Time { return time.Now().Add(s.skew) }

func (s *memStore) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// get returns a copy of the record under key.
func (s *memStore) get(key string) (memRec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	if !ok {
		return memRec{}, false
	}
	return *r, true
}

func (s *memStore) enter(method string) error {
	s.mu.Lock()
	s.calls[method]++
	return s.err
}

func (s *memStore) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	acq, err := s.acquire(req)
	if err == nil && s.onAcquire != nil {
		s.onAcquire(acq)
	}
	return acq, err
}

func (s *memStore) acquire(req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	err := s.enter("acquire")
	defer s.mu.Unlock()
	if err != nil {
		return idemstore.Acquisition{}, err
	}
	now := s.now()
	r, ok := s.recs[req.Key]
	if ok && r.completed && !now.Before(r.expires) {
		ok = false
	}
	switch {
	case !ok:
		s.recs[req.Key] = &memRec{token: req.Token, fingerprint: req.Fingerprint, fence: 1, deadline: now.Add(req.Lease)}
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, nil
	case r.fingerprint != req.Fingerprint:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil
	case r.completed:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: cloneRecord(r.record)}, nil
	case now.Before(r.deadline):
		return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: r.deadline.Sub(now)}, nil
	default:
		r.token, r.deadline = req.Token, now.Add(req.Lease)
		r.fence++
		return idemstore.Acquisition{Outcome: idemstore.OutcomeRecovered, Fence: r.fence}, nil
	}
}

// owned returns the in-progress record of key owned by token. Callers hold mu.
func (s *memStore) owned(key, token string) (*memRec, error) {
	r, ok := s.recs[key]
	if !ok || r.completed || r.token != token {
		return nil, idemstore.ErrNotOwner
	}
	return r, nil
}

func (s *memStore) Complete(_ context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	err := s.enter("complete")
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	r, err := s.owned(key, token)
	if err != nil {
		return err
	}
	r.completed, r.record, r.expires = true, cloneRecord(rec), s.now().Add(retention)
	return nil
}

func (s *memStore) Release(_ context.Context, key, token string) error {
	err := s.enter("release")
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := s.owned(key, token); err != nil {
		return err
	}
	delete(s.recs, key)
	return nil
}

func (s *memStore) Extend(_ context.Context, key, token string, lease time.Duration) error {
	err := s.extend(key, token, lease)
	if err == nil && s.onExtend != nil {
		s.onExtend()
	}
	return err
}

func (s *memStore) extend(key, token string, lease time.Duration) error {
	err := s.enter("extend")
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	r, err := s.owned(key, token)
	if err != nil {
		return err
	}
	r.deadline = s.now().Add(lease)
	return nil
}

func cloneRecord(r *idemstore.Record) *idemstore.Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Header = http.Header(r.Header).Clone()
	c.Body = slices.Clone(r.Body)
	return &c
}

// keys returns the storage keys the store holds.
func (s *memStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.recs))
}

// Package memstore is the reference in-memory idemstore.Store: the state
// machine of runtime/idemstore's documentation, written from it alone,
// with a step journal (idemstore.StepStore) and, through NewTx, runs in a
// transaction (idemstore.TxStore). It passes the conformance suite
// (idemstoretest), which is how it is tested.
//
// It is what the engine's own tests run on, as database/sql's are run on
// its fake driver, and a reference for a store of one's own. Keys and
// StepKeys show what it holds; Forget deletes a key's record and step
// journal, as an operator does. It keeps
// records in one process's memory: a restart loses them and two processes
// do not share them, so it protects nothing in production.
package memstore

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/memhooks"
)

// Store is an in-memory idemstore.Store and idemstore.StepStore. Its zero
// value is not usable: call New. It is safe for concurrent use.
type Store struct {
	now   func() time.Time
	mu    sync.Mutex            // guards the fields below
	recs  map[string]*memRecord // by key
	marks map[string]bool       // the marks committed runs wrote (TxWrite)
	steps map[string]*journal   // by key (steps.go)
}

var (
	_ idemstore.Store     = (*Store)(nil)
	_ idemstore.StepStore = (*Store)(nil)
	_ idemstore.TxStore   = (*TxStore)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithClock makes now the store's clock (default time.Now): leases and
// retentions lapse by it, so a test that moves it expires them without
// waiting.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, recs: map[string]*memRecord{}, marks: map[string]bool{}, steps: map[string]*journal{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// memRecord is one key's record.
type memRecord struct {
	fp, token string
	fence     int64
	until     time.Time // the lease's deadline, or the expiry of a completed record
	done      bool
	rec       idemstore.Record
}

// Acquire implements idemstore.Store.
func (s *Store) Acquire(_ context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.live(req.Key, now)
	switch {
	case r == nil:
		s.recs[req.Key] = &memRecord{fp: req.Fingerprint, token: req.Token, fence: 1, until: now.Add(req.Lease)}
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, nil
	case r.fp != req.Fingerprint:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil
	case r.done:
		rec := r.rec
		rec.Header, rec.Body = rec.Header.Clone(), bytes.Clone(rec.Body)
		return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: &rec}, nil
	case now.Before(r.until):
		return idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: r.until.Sub(now)}, nil
	}
	r.token, r.until = req.Token, now.Add(req.Lease)
	r.fence++
	return idemstore.Acquisition{Outcome: idemstore.OutcomeRecovered, Fence: r.fence}, nil
}

// live returns key's record, nil when there is none or its retention has
// lapsed. s.mu is held.
func (s *Store) live(key string, now time.Time) *memRecord {
	r := s.recs[key]
	if r != nil && r.done && !now.Before(r.until) {
		delete(s.recs, key)
		return nil
	}
	return r
}

// owned returns key's in-progress record if token owns it. s.mu is held.
func (s *Store) owned(key, token string) *memRecord {
	if r := s.recs[key]; r != nil && !r.done && r.token == token {
		return r
	}
	return nil
}

// Complete implements idemstore.Store.
func (s *Store) Complete(_ context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completeLocked(s.owned(key, token), rec, retention)
}

func (s *Store) completeLocked(r *memRecord, rec *idemstore.Record, retention time.Duration) error {
	if r == nil {
		return idemstore.ErrNotOwner
	}
	r.done, r.until = true, s.now().Add(retention)
	r.rec = *rec
	r.rec.Header, r.rec.Body = rec.Header.Clone(), bytes.Clone(rec.Body)
	return nil
}

// Release implements idemstore.Store.
func (s *Store) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owned(key, token) == nil {
		return idemstore.ErrNotOwner
	}
	delete(s.recs, key)
	return nil
}

// Extend implements idemstore.Store.
func (s *Store) Extend(_ context.Context, key, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(key, token)
	if r == nil {
		return idemstore.ErrNotOwner
	}
	r.until = s.now().Add(lease)
	return nil
}

// lookup returns what the store holds under key, and false when it holds
// nothing (or a completed record whose retention has lapsed): the runtime's
// tests read it through memhooks.Lookup.
func (s *Store) lookup(key string) (memhooks.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.live(key, s.now())
	if r == nil {
		return memhooks.Entry{}, false
	}
	e := memhooks.Entry{Fingerprint: r.fp, Token: r.token, Fence: r.fence, Completed: r.done, Until: r.until}
	if r.done {
		rec := r.rec
		rec.Header, rec.Body = rec.Header.Clone(), bytes.Clone(rec.Body)
		e.Record = &rec
	}
	return e, true
}

// Keys returns the keys the store holds records under, sorted.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for key := range s.recs {
		s.live(key, now)
	}
	return slices.Sorted(maps.Keys(s.recs))
}

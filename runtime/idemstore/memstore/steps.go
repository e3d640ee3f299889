package memstore

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// journal is a key's step journal: the results of the steps journaled for
// a request of fingerprint fp, by name. A key has at most one, as on Redis
// (lua/step.lua): the first step journaled for a request of another
// fingerprint replaces it, so a key whose requests change does not keep
// every request's journal.
type journal struct {
	fp    string
	steps map[string][]byte
}

// LoadSteps implements idemstore.StepStore.
func (s *Store) LoadSteps(_ context.Context, key, token string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(key, token)
	if r == nil {
		return nil, idemstore.ErrNotOwner
	}
	steps := map[string][]byte{}
	if j := s.steps[key]; j != nil && j.fp == r.fp {
		for name, result := range j.steps {
			steps[name] = bytes.Clone(result)
		}
	}
	return steps, nil
}

// BeginStep implements idemstore.StepStore.
func (s *Store) BeginStep(_ context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	return &memStep{s: s, key: key, token: token, fence: fence}, nil
}

// memStep is one step of a run: its result is journaled by the run that
// owns the lease, token and fence.
type memStep struct {
	s          *Store
	key, token string
	fence      int64
}

// Context implements idemstore.StepTx.
func (st *memStep) Context(ctx context.Context) context.Context { return ctx }

// Commit implements idemstore.StepTx. The journal outlives the record (a
// released run leaves it to the next run of the same request); this store
// keeps it until a step of another request of the key replaces it, or
// Forget deletes it.
func (st *memStep) Commit(_ context.Context, name string, result []byte, _ time.Duration) error {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(st.key, st.token)
	if r == nil || r.fence != st.fence {
		return idemstore.ErrNotOwner
	}
	j := s.steps[st.key]
	if j == nil || j.fp != r.fp {
		j = &journal{fp: r.fp, steps: map[string][]byte{}}
		s.steps[st.key] = j
	}
	j.steps[name] = bytes.Clone(result)
	return nil
}

// Rollback implements idemstore.StepTx: a step writes nothing before
// Commit.
func (st *memStep) Rollback(context.Context) error { return nil }

// StepKeys returns the keys the store holds a step journal under, sorted:
// a key's journal outlives its record, so these may be keys Keys does not
// list (a run released, kept for a retry to resume from).
func (s *Store) StepKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.steps))
}

// Forget deletes key's record, whatever its state, and its step journal,
// as an operator does on Redis (redisstore's Store.Forget, idemctl
// forget): the next request with the key runs the operation again, every
// step included. A run that held the key's lease is no longer its owner
// (its steps and its completion are refused with
// idemstore.ErrNotOwner). Forget reports whether there was a record or a
// journal to delete.
func (s *Store) Forget(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.live(key, s.now()) != nil // a lapsed record is none
	_, steps := s.steps[key]
	delete(s.recs, key)
	delete(s.steps, key)
	return rec || steps
}

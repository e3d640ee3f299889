package memstore

import (
	"bytes"
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// stepKey is the journal's key: the record's key and its request's
// fingerprint.
type stepKey struct{ key, fp string }

// LoadSteps implements idemstore.StepStore.
func (s *Store) LoadSteps(_ context.Context, key, token string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(key, token)
	if r == nil {
		return nil, idemstore.ErrNotOwner
	}
	steps := map[string][]byte{}
	for name, result := range s.steps[stepKey{key, r.fp}] {
		steps[name] = bytes.Clone(result)
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
// released run leaves it to the next); this store keeps it for as long as
// it runs.
func (st *memStep) Commit(_ context.Context, name string, result []byte, _ time.Duration) error {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(st.key, st.token)
	if r == nil || r.fence != st.fence {
		return idemstore.ErrNotOwner
	}
	sk := stepKey{st.key, r.fp}
	if s.steps[sk] == nil {
		s.steps[sk] = map[string][]byte{}
	}
	s.steps[sk][name] = bytes.Clone(result)
	return nil
}

// Rollback implements idemstore.StepTx: a step writes nothing before
// Commit.
func (st *memStep) Rollback(context.Context) error { return nil }

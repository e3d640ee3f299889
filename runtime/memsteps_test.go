package idem_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// memStepStore is a memStore that keeps step journals as lua/step.lua and
// lua/steps.lua do: one journal per storage key, belonging to the
// fingerprint of the record it was written under, outliving a release of
// the record; a journal of another fingerprint is not read, and is dropped
// by the first step written for a new one. It sees the records through
// memStore.get only (owner, fence, fingerprint), so each call checks the
// owner and then acts, not atomically: enough for the engine tests, which
// do not race a step against a takeover of its key.
type memStepStore struct {
	*memStore
	mu       sync.Mutex             // guards journals
	journals map[string]*memJournal // by storage key
}

type memJournal struct {
	fingerprint string
	steps       map[string][]byte
}

var _ idemstore.StepStore = (*memStepStore)(nil)

func newMemStepStore() *memStepStore {
	return &memStepStore{memStore: newMemStore(), journals: map[string]*memJournal{}}
}

// forgetJournal deletes the journal of key, as an operator would.
func (s *memStepStore) forgetJournal(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.journals, key)
}

// owner returns the in-progress record of key if token owns it.
func (s *memStepStore) owner(key, token string) (memRec, error) {
	r, ok := s.get(key)
	if !ok || r.completed || r.token != token {
		return memRec{}, idemstore.ErrNotOwner
	}
	return r, nil
}

func (s *memStepStore) LoadSteps(_ context.Context, key, token string) (map[string][]byte, error) {
	r, err := s.owner(key, token)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.journals[key]
	if j == nil || j.fingerprint != r.fingerprint {
		return map[string][]byte{}, nil
	}
	return maps.Clone(j.steps), nil
}

func (s *memStepStore) BeginStep(_ context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	return &memStepTx{s: s, key: key, token: token, fence: fence}, nil
}

type memStepTx struct {
	s          *memStepStore
	key, token string
	fence      int64
}

func (t *memStepTx) Context(ctx context.Context) context.Context { return ctx }
func (t *memStepTx) Rollback(context.Context) error              { return nil }

func (t *memStepTx) Commit(_ context.Context, name string, result []byte, _ time.Duration) error {
	if name == "" {
		return errors.New("memstore: step: empty name")
	}
	s := t.s
	r, err := s.owner(t.key, t.token)
	if err != nil {
		return err
	}
	if r.fence != t.fence {
		return idemstore.ErrNotOwner
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.journals[t.key]
	if j == nil || j.fingerprint != r.fingerprint {
		j = &memJournal{fingerprint: r.fingerprint, steps: map[string][]byte{}}
		s.journals[t.key] = j
	}
	j.steps[name] = append([]byte(nil), result...)
	return nil
}

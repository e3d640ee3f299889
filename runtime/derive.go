package idem

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// runScope is what a protected run's context carries beyond its Info: the
// run's identity, from which the keys of its own calls are derived, and the
// counters of those calls. A step's function gets a scope of its own
// (path: the step's name), so that the calls a journaled step made on the
// first run, and does not make on a re-run, shift no other call's ordinal.
type runScope struct {
	run  *runState
	path string // "" for the handler, the step names within it otherwise

	mu    sync.Mutex     // guards calls
	calls map[string]int // calls begun so far, per callee operation
}

// runState is what the scopes of one protected run share. A lease holds it, so
// that a run that asks for no derived key and runs no step pays nothing.
type runState struct {
	l *lease // the run: its store, key, token and fence

	idOnce sync.Once
	id     [32]byte // the run's identity (runIdentity)

	journal journal // the steps (step.go)
}

// identity returns the run's identity, computed once.
func (r *runState) identity() *[32]byte {
	r.idOnce.Do(func() { r.id = runIdentity(r.l.k) })
	return &r.id
}

// runKey is the context key of a run's *runScope.
type runKey struct{}

// scopeFrom returns the run scope ctx carries, or nil.
func scopeFrom(ctx context.Context) *runScope {
	s, _ := idemstore.Value(ctx, runKey{}).(*runScope)
	return s
}

// runIdentity is the hash of what names a run's request in every process
// and on every fence: its API, operation, hashed scope, client key and
// fingerprint (k.sum, the payload's). The fingerprint makes the identity
// the step journal's too: a store keeps a journal for the record's key and
// fingerprint, so a re-run of the same request finds the journal and
// derives the same keys, and a request with another payload under a key
// released meanwhile finds no journal and derives keys of its own (v1 left
// the fingerprint out: its keys made a provider replay the released
// request's calls). Each part is length-prefixed, so no two tuples share a
// hash input.
func runIdentity(k *keyedRequest) [32]byte {
	h := sha256.New()
	var b []byte
	for _, p := range [...]string{"idem-run-v2", k.name.api, k.op.ID, k.scope, k.key} {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	b = binary.AppendUvarint(b, uint64(len(k.sum)))
	b = append(b, k.sum[:]...)
	h.Write(b)
	var id [32]byte
	h.Sum(id[:0])
	return id
}

// derive returns the key of the thing named by kind and parts in s's run:
// 128 bits of a SHA-256 over the run's identity, s's path, kind and parts,
// as 32 lower-case hex digits, the form of a random call key. It reveals
// nothing of the inbound key or scope.
func (s *runScope) derive(kind string, parts ...string) string {
	h := sha256.New()
	h.Write(s.run.identity()[:])
	var b []byte
	for _, p := range append([]string{s.path, kind}, parts...) {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	h.Write(b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// callKey returns the derived key of the next call to operation op in s:
// the n-th call (from 0) gets the key of ordinal n, on every run.
func (s *runScope) callKey(op string) string {
	s.mu.Lock()
	n := s.calls[op]
	if s.calls == nil {
		s.calls = make(map[string]int)
	}
	s.calls[op] = n + 1
	s.mu.Unlock()
	return s.derive("call", op, strconv.Itoa(n))
}

// child returns the scope of step name within s.
func (s *runScope) child(name string) *runScope {
	path := name
	if s.path != "" {
		path = s.path + "\x00" + name
	}
	return &runScope{run: s.run, path: path}
}

// DerivedKey returns an idempotency key derived from the protected run whose
// context ctx is (or derives from) and from name: the same on every run of
// the same request (the same API, operation, scope, client key and
// payload: the request's fingerprint), in any process and on any fence,
// and different for every other name or request. A request with another
// payload under a key whose run failed (and released it) is another
// request: its keys differ, as its step journal does.
// Use it for what a handler sets in motion that no generated client call
// covers: a message it publishes (the consumer deduplicates with [Do] on the
// key), a call through a client of its own.
//
// name says which of the handler's effects the key stands for
// ("ledger-entry", "ledger-entry/"+line.ID): one name, one effect. Unlike
// the keys of client calls, a named key has no ordinal, so goroutines of one
// run may ask for keys in any order. Inside a [Step], the key is the step's
// own (the step's name is part of it).
//
// The key is 32 lower-case hex digits (128 bits of a SHA-256); it reveals
// neither the inbound key nor the scope. It returns ErrNoRun when ctx is not
// from a protected run, and an error when name is empty.
func DerivedKey(ctx context.Context, name string) (string, error) {
	s := scopeFrom(ctx)
	if s == nil {
		return "", ErrNoRun
	}
	if name == "" {
		return "", errors.New("idem: DerivedKey: empty name")
	}
	return s.derive("name", name), nil
}

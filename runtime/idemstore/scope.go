package idemstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"sync"
)

// defaultScopeSecret hashes scopes when no secret is set (package idem:
// WithScope without WithScopeSecret). It is public: it hides a scope from a
// casual reader of key names, not from someone who guesses it.
var defaultScopeSecret = []byte("idemgen scope v1")

// ScopeKey is the form a request's scope takes in its record's key (the
// scope argument of [RecordKeyIn]) for an engine configured with
// WithScopeSecret(secret), or with no secret when secret is nil: HMAC-SHA256
// of the scope, 128 bits in unpadded base64url. Tools that look a record up
// by tenant, such as idemctl, compute it; the engine does so itself, with a
// [ScopeHasher].
func ScopeKey(secret []byte, scope string) string {
	return newScopeHMAC(secret).key(scope)
}

// ScopeHasher computes [ScopeKey] for one secret, reusing its HMACs (keying
// one costs more than hashing a scope with it). It is safe for concurrent
// use.
type ScopeHasher struct{ pool sync.Pool }

// NewScopeHasher returns the ScopeHasher of secret (nil: the default, as
// for [ScopeKey]).
func NewScopeHasher(secret []byte) *ScopeHasher {
	return &ScopeHasher{pool: sync.Pool{New: func() any { return newScopeHMAC(secret) }}}
}

// Key returns [ScopeKey] of scope under h's secret.
func (h *ScopeHasher) Key(scope string) string {
	m := h.pool.Get().(*scopeHMAC)
	out := m.key(scope)
	h.pool.Put(m)
	return out
}

// scopeHMAC is an HMAC of scopes with the buffers of its input and sum,
// which a call through the hash.Hash interface would otherwise allocate
// each time.
type scopeHMAC struct {
	m   hash.Hash
	in  []byte
	sum [sha256.Size]byte
}

// newScopeHMAC returns the scopeHMAC of secret (nil: the default).
func newScopeHMAC(secret []byte) *scopeHMAC {
	return &scopeHMAC{m: hmac.New(sha256.New, orDefaultSecret(secret))}
}

// key returns [ScopeKey] of scope, which never holds a ':' or a '\',
// allocating only the result.
func (h *scopeHMAC) key(scope string) string {
	h.in = append(h.in[:0], scope...)
	h.m.Reset()
	h.m.Write(h.in)
	sum := h.m.Sum(h.sum[:0])
	if cap(h.in) > 1024 {
		h.in = nil // a long scope's buffer is not kept
	}
	var out [22]byte // base64.RawURLEncoding.EncodedLen(16)
	base64.RawURLEncoding.Encode(out[:], sum[:16])
	return string(out[:])
}

// orDefaultSecret returns secret, or the default secret when it is nil.
func orDefaultSecret(secret []byte) []byte {
	if secret == nil {
		return defaultScopeSecret
	}
	return secret
}

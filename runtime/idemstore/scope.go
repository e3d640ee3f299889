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
	return scopeKey(hmac.New(sha256.New, orDefaultSecret(secret)), scope)
}

// ScopeHasher computes [ScopeKey] for one secret, reusing its HMACs (keying
// one costs more than hashing a scope with it). It is safe for concurrent
// use.
type ScopeHasher struct{ pool sync.Pool }

// NewScopeHasher returns the ScopeHasher of secret (nil: the default, as
// for [ScopeKey]).
func NewScopeHasher(secret []byte) *ScopeHasher {
	secret = orDefaultSecret(secret)
	return &ScopeHasher{pool: sync.Pool{New: func() any { return hmac.New(sha256.New, secret) }}}
}

// Key returns [ScopeKey] of scope under h's secret.
func (h *ScopeHasher) Key(scope string) string {
	m := h.pool.Get().(hash.Hash)
	out := scopeKey(m, scope)
	h.pool.Put(m)
	return out
}

// orDefaultSecret returns secret, or the default secret when it is nil.
func orDefaultSecret(secret []byte) []byte {
	if secret == nil {
		return defaultScopeSecret
	}
	return secret
}

// scopeKey hashes scope with the HMAC m, which it resets first; the result
// never holds a ':' or a '\'.
func scopeKey(m hash.Hash, scope string) string {
	m.Reset()
	m.Write([]byte(scope))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(m.Sum(sum[:0])[:16])
}

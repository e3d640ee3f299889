package idem

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// scopeKind is the key-space choice the options made.
type scopeKind uint8

const (
	scopeUnset  scopeKind = iota // no choice: one shared key space, refused for secured operations
	scopeFunc                    // WithScope
	scopeHeader                  // WithScopeFromHeader
	scopeShared                  // WithSharedKeySpace
)

// String names the option behind the choice.
func (k scopeKind) String() string {
	return [...]string{"no scope", "idem.WithScope", "idem.WithScopeFromHeader", "idem.WithSharedKeySpace()"}[k]
}

// choose records a key-space choice; a second, different one is an error
// NewEngine reports.
func (c *config) choose(k scopeKind) {
	if c.scopeKind != scopeUnset && c.scopeKind != k && c.scopeErr == "" {
		c.scopeErr = fmt.Sprintf("idem: %s and %s contradict each other: choose one key space", c.scopeKind, k)
	}
	c.scopeKind = k
}

// WithScope scopes keys by fn's answer for each request: a tenant, or the
// authenticated principal. Keys of different scopes never meet, so one
// caller can never replay another's response by guessing or reusing its
// key. The scope is stored hashed (see [WithScopeSecret]).
//
// For a bearer token or OAuth, return the principal the token stands for
// (its subject), not the token: a token refreshed between a request and its
// retry would otherwise turn the retry into a second run. For an API key,
// use [WithScopeFromHeader].
func WithScope(fn ScopeFunc) Option {
	return func(c *config) {
		c.choose(scopeFunc)
		c.scope = fn
	}
}

// WithScopeFromHeader scopes keys by the value of the request header name,
// such as the API key of an apiKey security scheme: each API key has a key
// space of its own. On an operation that declares security, a request
// without the header (or with an empty one) is answered 401 with code
// missing-credential, unless [WithAnonymousCallers] lets such requests
// share one key space; on other operations they share one. The value is a credential, so it is stored only as
// a keyed hash: WithScopeFromHeader requires [WithScopeSecret], and the
// engine panics at construction without it.
func WithScopeFromHeader(name string) Option {
	name = http.CanonicalHeaderKey(name)
	return func(c *config) {
		c.choose(scopeHeader)
		c.scopeHeader = name
		c.scope = func(r *http.Request) (string, error) { return headerScope(r.Header, name), nil }
	}
}

// headerScope is WithScopeFromHeader's scope: the values of the header
// name (canonical) in h, joined by NUL, which never occurs in a header
// value.
func headerScope(h headerValues, name string) string {
	return strings.Join(h.Values(name), "\x00")
}

// WithAnonymousCallers lets requests without the credential of
// [WithScopeFromHeader] through on operations that declare security: they
// all share one key space, so one anonymous caller's key replays another's
// response. Without it, such a request is answered 401 with code
// missing-credential and its handler does not run.
func WithAnonymousCallers() Option { return func(c *config) { c.anonymous = true } }

// WithSharedKeySpace says, explicitly, that every caller shares one key
// space: a key sent by one caller replays the response stored for another.
// It is the behaviour without any scope option, but an engine for
// operations whose spec requires security refuses to start without a
// scope choice, and this is one.
func WithSharedKeySpace() Option {
	return func(c *config) {
		c.choose(scopeShared)
		c.scope = nil
	}
}

// WithScopeSecret sets the key of the HMAC-SHA256 that hashes every scope
// before it becomes part of a storage key, so that key names in the store
// (and the key hashes in logs and events) reveal nothing about tenants or
// credentials to whoever lacks the secret. It must be at least
// MinScopeSecret bytes (the engine panics otherwise) and the same in every
// process that shares the store, and across restarts: another secret gives
// every scope another key space, so retries in flight would run again.
// Keep it with your other secrets; rotate it only with that in mind.
//
// Without it, [WithScope]'s scopes are hashed with a fixed, public key: the
// key names do not show a tenant in the clear, but whoever can read the
// store can test guesses. [WithScopeFromHeader] requires it.
func WithScopeSecret(secret []byte) Option {
	// Never nil once given, so that an empty secret (a variable that was
	// never loaded) is reported as such rather than as a missing option.
	secret = append(make([]byte, 0, len(secret)), secret...)
	return func(c *config) { c.scopeSecret = secret }
}

// missingCredential is the 401 for a request to op, which declares
// security, that lacks WithScopeFromHeader's header or sends it empty
// (header returns a request header's values):
// without it, every such caller would share one key space. nil when the
// credential is there, op declares no security, the scope comes from
// elsewhere, or WithAnonymousCallers allows it.
func (c *config) missingCredential(header func(name string) []string, op *idemop.Operation) *Problem {
	if c.scopeKind != scopeHeader || c.anonymous || len(op.Security) == 0 {
		return nil
	}
	for _, v := range header(c.scopeHeader) {
		if strings.TrimSpace(v) != "" {
			return nil
		}
	}
	return problemf(http.StatusUnauthorized, idemop.CodeMissingCredential,
		"operation %s requires the %s header, which scopes its idempotency keys; send the credential", op.ID, c.scopeHeader)
}

// checkScope reports the problems of the key-space options alone: a
// contradiction, a short secret, a credential without a secret.
func (c *config) checkScope() string {
	switch {
	case c.scopeErr != "":
		return c.scopeErr
	case c.scopeKind == scopeFunc && c.scope == nil:
		return "idem: WithScope(nil) chooses no scope: pass the function, or say idem.WithSharedKeySpace()"
	case c.scopeSecret != nil && len(c.scopeSecret) == 0:
		return fmt.Sprintf("idem: WithScopeSecret: the secret is empty (was it loaded?); use at least %d bytes of random data", MinScopeSecret)
	case c.scopeSecret != nil && len(c.scopeSecret) < MinScopeSecret:
		return fmt.Sprintf("idem: WithScopeSecret: the secret has %d bytes; use at least %d bytes of random data", len(c.scopeSecret), MinScopeSecret)
	case c.scopeKind == scopeHeader && c.scopeSecret == nil:
		return fmt.Sprintf("idem: WithScopeFromHeader(%q) hashes a credential into storage keys and needs a key for that hash: add idem.WithScopeSecret(secret), at least %d random bytes shared by every instance", c.scopeHeader, MinScopeSecret)
	}
	return ""
}

// hashScope is the form of a scope in storage keys ([idemstore.ScopeKey]).
func (c *config) hashScope(scope string) string { return c.scopes.Key(scope) }

// unscopedSecured is the start-up failure for operations that declare
// security while the options choose no key space; "" when there is none.
func (c *config) unscopedSecured(ops []*idemop.Operation) string {
	if c.scopeKind != scopeUnset {
		return ""
	}
	var names []string
	var schemes []string
	header := ""
	for _, op := range ops {
		if op == nil || len(op.Security) == 0 {
			continue
		}
		names = append(names, op.ID)
		for _, s := range op.Security {
			d := s.Scheme + ": " + s.Type
			if s.Type == "apiKey" {
				d += " in " + s.In + " " + s.Name
				if s.In == "header" && header == "" {
					header = s.Name
				}
			}
			if !slices.Contains(schemes, d) {
				schemes = append(schemes, d)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	var b strings.Builder
	verb, their := "declare", "their"
	if len(names) == 1 {
		verb, their = "declares", "its"
	}
	fmt.Fprintf(&b, "idem: %s %s security (%s), so %s idempotency keys must not be shared by every caller, "+
		"or one caller could replay another's response by sending its key. Choose a key space with one option:\n",
		strings.Join(names, ", "), verb, strings.Join(schemes, "; "), their)
	if header != "" {
		fmt.Fprintf(&b, "\tidem.WithScopeFromHeader(%q), idem.WithScopeSecret(secret) // one key space per API key, stored as a keyed hash\n", header)
	}
	b.WriteString("\tidem.WithScope(func(r *http.Request) (string, error) { ... }) // your tenant or authenticated principal (for OAuth, the subject, not the token)\n")
	b.WriteString("\tidem.WithSharedKeySpace() // every caller shares one key space")
	return b.String()
}

package e2e_test

import (
	"net/http"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestMissingCredentialRefused: scoped by an API key header on an
// operation that declares security, a request without the header, or with
// an empty one, is answered 401 missing-credential before the handler runs
// and before anything is stored: keyless callers never share a key space.
// idem.WithAnonymousCallers() lets them share one explicitly.
func TestMissingCredentialRefused(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		h := newHarnessOn(t, store, *securedOp("CreatePet"), nil,
			idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret(testScopeSecret))
		for name, r := range map[string]*http.Request{
			"absent": engineReq("POST", "/pets", `{"name":"Rex"}`, "Idempotency-Key", "k"),
			"empty":  engineReq("POST", "/pets", `{"name":"Rex"}`, "Idempotency-Key", "k", "X-API-Key", ""),
		} {
			p := checkProblem(t, h.do(r), http.StatusUnauthorized, idemop.CodeMissingCredential)
			if p.Detail == "" {
				t.Errorf("%s: the problem does not say what is missing", name)
			}
		}
		h.wantRuns(0)
		if w := h.do(engineReq("POST", "/pets", `{"name":"Rex"}`, "Idempotency-Key", "k", "X-API-Key", "sk_a")); w.Code != http.StatusCreated {
			t.Fatalf("with a credential: %d %s", w.Code, w.Body)
		}
		h.wantRuns(1)

		anon := newHarnessOn(t, store, *securedOp("CreateAnon"), nil,
			idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret(testScopeSecret), idem.WithAnonymousCallers())
		for range 2 {
			if w := anon.do(engineReq("POST", "/pets", `{"name":"Rex"}`, "Idempotency-Key", "k")); w.Code != http.StatusCreated {
				t.Fatalf("anonymous caller allowed: %d %s", w.Code, w.Body)
			}
		}
		anon.wantRuns(1) // allowed anonymous callers share one key space, as they asked
	})
}

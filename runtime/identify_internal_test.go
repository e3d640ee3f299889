package idem

import (
	"net/http"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestCanonicalKeyHeader: the key header's name is looked up in its
// canonical form, the default's without canonicalising it each time.
func TestCanonicalKeyHeader(t *testing.T) {
	for _, name := range []string{idemop.DefaultKeyHeader, "idempotency-key", "x-request-key", "X-Request-Key"} {
		if got, want := canonicalKeyHeader(name), http.CanonicalHeaderKey(name); got != want {
			t.Errorf("canonicalKeyHeader(%q) = %q, want %q", name, got, want)
		}
	}
}

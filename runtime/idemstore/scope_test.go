package idemstore

import (
	"strings"
	"testing"
)

// TestScopeKey: a scope's key is HMAC-SHA256 of it under the secret (the
// default one for nil), 128 bits in unpadded base64url, the same from
// ScopeKey and from a ScopeHasher reused for scopes short and long. The
// values are pinned: records are stored under them.
func TestScopeKey(t *testing.T) {
	bench := []byte("bench scope secret, 32 bytes ...")
	for _, c := range []struct {
		secret      []byte
		scope, want string
	}{
		{nil, "tenant-4711", "W5dRvrmyjHUytHnR89Dztg"},
		{nil, "", "9wCQqrsYr9EHkdX-q6yNcA"},
		{bench, "tenant-4711", "FpMd5hfBf3UH62zBNKsnEw"},
	} {
		if got := ScopeKey(c.secret, c.scope); got != c.want {
			t.Errorf("ScopeKey(%q, %q) = %q, want %q", c.secret, c.scope, got, c.want)
		}
	}
	h := NewScopeHasher(bench)
	for _, scope := range []string{"tenant-4711", strings.Repeat("long scope ", 200), "", "tenant-4711", "a:b\\c"} {
		if got, want := h.Key(scope), ScopeKey(bench, scope); got != want {
			t.Errorf("ScopeHasher.Key(%.20q) = %q, ScopeKey %q", scope, got, want)
		}
	}
}

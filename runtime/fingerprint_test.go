package idem

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
)

func TestFingerprintParts(t *testing.T) {
	op := &idemop.Operation{ID: "A"}
	base := fingerprint(op, httptest.NewRequest("POST", "/x", nil), payload{raw: []byte("ab")})
	if fingerprint(&idemop.Operation{ID: "B"}, httptest.NewRequest("POST", "/x", nil), payload{raw: []byte("ab")}) == base {
		t.Error("the operation is not part of the fingerprint")
	}
	if fingerprint(op, httptest.NewRequest("PUT", "/x", nil), payload{raw: []byte("ab")}) == base {
		t.Error("the method is not part of the fingerprint")
	}
	if fingerprint(op, httptest.NewRequest("POST", "/x", nil), jsonPayload(op, []byte(`"ab"`))) == base {
		t.Error("a JSON and a raw body hash alike")
	}
	if fingerprint(op, withHeader(httptest.NewRequest("POST", "/x", nil), "Idempotency-Key", "other"), payload{raw: []byte("ab")}) != base {
		t.Error("the key header is part of the fingerprint")
	}
	if fingerprint(op, httptest.NewRequest("POST", "/x?a=%zz", nil), payload{}) == fingerprint(op, httptest.NewRequest("POST", "/x?a=%zy", nil), payload{}) {
		t.Error("unparsable queries hash alike")
	}
}

// withHeader sets a header of r and returns r.
func withHeader(r *http.Request, name, value string) *http.Request {
	r.Header.Set(name, value)
	return r
}

func TestIsJSONContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"":                                  false,
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"application/json; charset=UTF-8":   true,
		"Application/JSON":                  true,
		"application/json ; charset=utf-8":  true,
		"application/merge-patch+json":      true,
		"application/json; charset":         false, // malformed parameter
		"text/json":                         false,
		"application/octet-stream":          false,
		"APPLICATION/PROBLEM+JSON; q=1":     true,
		"application/x-www-form-urlencoded": false,
		"text/plain; format=json":           false,
	} {
		if got := isJSONContentType(ct); got != want {
			t.Errorf("isJSONContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

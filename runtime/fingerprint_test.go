package idem

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"/", []string{""}, true},
		{"/a/b", []string{"a", "b"}, true},
		{"/a~1b/c~0d/~01", []string{"a/b", "c~d", "~1"}, true},
		{"a", nil, false},
		{"/a~2", nil, false},
		{"/a~", nil, false},
	} {
		got, err := parsePointer(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parsePointer(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestLookupPointer(t *testing.T) {
	doc, err := decodeJSON([]byte(`{"a":{"b":[1,{"c":"x"}]},"k/e":"v"}`))
	if err != nil {
		t.Fatal(err)
	}
	for ptr, want := range map[string]any{"/a/b/1/c": "x", "/k~1e": "v"} {
		toks, _ := parsePointer(ptr)
		if got, ok := lookupPointer(doc, toks); !ok || got != want {
			t.Errorf("lookup %s = %v, %v", ptr, got, ok)
		}
	}
	for _, ptr := range []string{"/a/b/2", "/a/b/01", "/a/b/-", "/x", "/a/b/1/c/d"} {
		toks, _ := parsePointer(ptr)
		if _, ok := lookupPointer(doc, toks); ok {
			t.Errorf("lookup %s resolved", ptr)
		}
	}
}

func TestFingerprintParts(t *testing.T) {
	op := &Operation{ID: "A"}
	base := fingerprint(op, httptest.NewRequest("POST", "/x", nil), payload{raw: []byte("ab")})
	if fingerprint(&Operation{ID: "B"}, httptest.NewRequest("POST", "/x", nil), payload{raw: []byte("ab")}) == base {
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
		"":                                 false,
		"application/json":                 true,
		"application/json; charset=utf-8":  true,
		"application/json; charset=UTF-8":  true,
		"Application/JSON":                 true,
		"application/json ; charset=utf-8": true,
		"application/merge-patch+json":     true,
		"application/json; charset":        false, // malformed parameter
		"text/json":                        false,
		"application/octet-stream":         false,
	} {
		if got := isJSONContentType(ct); got != want {
			t.Errorf("isJSONContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

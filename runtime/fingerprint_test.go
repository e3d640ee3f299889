package idem

import (
	"net/http"
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
	for _, ptr := range []string{"/a/b/2", "/a/b/01", "/a/b/-", "/a/b/+1", "/a/b/-0", "/x", "/a/b/1/c/d"} {
		toks, _ := parsePointer(ptr)
		if _, ok := lookupPointer(doc, toks); ok {
			t.Errorf("lookup %s resolved", ptr)
		}
	}
}

func TestFingerprintParts(t *testing.T) {
	op := &Operation{ID: "A"}
	base := fingerprint(op, engineReq("POST", "/x", ""), payload{raw: []byte("ab")})
	if fingerprint(&Operation{ID: "B"}, engineReq("POST", "/x", ""), payload{raw: []byte("ab")}) == base {
		t.Error("the operation is not part of the fingerprint")
	}
	if fingerprint(op, engineReq("PUT", "/x", ""), payload{raw: []byte("ab")}) == base {
		t.Error("the method is not part of the fingerprint")
	}
	if fingerprint(op, engineReq("POST", "/x", ""), jsonPayload(op, []byte(`"ab"`))) == base {
		t.Error("a JSON and a raw body hash alike")
	}
	if fingerprint(op, engineReq("POST", "/x", "", "Idempotency-Key", "other"), payload{raw: []byte("ab")}) != base {
		t.Error("the key header is part of the fingerprint")
	}
	if fingerprint(op, engineReq("POST", "/x?a=%zz", ""), payload{}) == fingerprint(op, engineReq("POST", "/x?a=%zy", ""), payload{}) {
		t.Error("unparsable queries hash alike")
	}
}

func TestJSONCanonicalFingerprint(t *testing.T) {
	op := Operation{FingerprintIgnore: []string{"/meta/trace"}, FingerprintHeaders: []string{"x-account-id"}}
	for _, tc := range []struct {
		name        string
		first, next *http.Request
		replay      bool
	}{
		{"whitespace and member order",
			engineReq("POST", "/pets", `{"name":"rex","tags":["a","b"],"n":1.50}`),
			engineReq("POST", "/pets", "{ \"n\" : 1.50,\n \"tags\": [\"a\", \"b\"], \"name\": \"rex\" }"), true},
		{"ignored pointer",
			engineReq("POST", "/pets", `{"name":"rex","meta":{"trace":"1"}}`),
			engineReq("POST", "/pets", `{"meta":{"trace":"2"},"name":"rex"}`), true},
		{"+json media type",
			engineReq("POST", "/pets", `{"a":1,"b":2}`, "Content-Type", "application/merge-patch+json"),
			engineReq("POST", "/pets", `{"b":2, "a":1}`, "Content-Type", "application/merge-patch+json"), true},
		{"query order",
			engineReq("POST", "/pets?b=2&a=1", `{}`), engineReq("POST", "/pets?a=1&b=2", `{}`), true},
		{"number spelling is significant",
			engineReq("POST", "/pets", `{"n":1.5}`), engineReq("POST", "/pets", `{"n":1.50}`), false},
		{"array order is significant",
			engineReq("POST", "/pets", `{"t":["a","b"]}`), engineReq("POST", "/pets", `{"t":["b","a"]}`), false},
		{"path parameter",
			engineReq("POST", "/pets/1", `{}`), engineReq("POST", "/pets/2", `{}`), false},
		{"query value",
			engineReq("POST", "/pets?a=1", `{}`), engineReq("POST", "/pets?a=2", `{}`), false},
		{"listed header",
			engineReq("POST", "/pets", `{}`, "X-Account-Id", "1"), engineReq("POST", "/pets", `{}`, "X-Account-Id", "2"), false},
		{"unlisted header",
			engineReq("POST", "/pets", `{}`, "X-Trace", "1"), engineReq("POST", "/pets", `{}`, "X-Trace", "2"), true},
		{"raw body whitespace is significant",
			textReq(`a b`), textReq(`a  b`), false},
		{"raw body",
			textReq(`a b`), textReq(`a b`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, op, nil)
			tc.first.Header.Set("Idempotency-Key", "k")
			tc.next.Header.Set("Idempotency-Key", "k")
			first := h.do(tc.first)
			w := h.do(tc.next)
			if tc.replay {
				if w.Code != first.Code || w.Header().Get(HeaderReplayed) != "true" || w.Body.String() != first.Body.String() {
					t.Fatalf("want a replay, got %d %s", w.Code, w.Body)
				}
			} else {
				checkProblem(t, w, http.StatusUnprocessableEntity, CodeFingerprintMismatch)
			}
			h.wantRuns(1)
		})
	}
}

func textReq(body string) *http.Request {
	r := engineReq("POST", "/pets", body)
	r.Header.Set("Content-Type", "text/plain")
	return r
}

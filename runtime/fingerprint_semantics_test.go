package idem_test

import (
	"net/http"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
)

func TestJSONCanonicalFingerprint(t *testing.T) {
	op := idemop.Operation{FingerprintIgnore: []string{"/meta/trace"}, FingerprintHeaders: []string{"x-account-id"}}
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
				if w.Code != first.Code || w.Header().Get(idemop.HeaderReplayed) != "true" || w.Body.String() != first.Body.String() {
					t.Fatalf("want a replay, got %d %s", w.Code, w.Body)
				}
			} else {
				checkProblem(t, w, http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
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

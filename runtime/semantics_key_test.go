package idem_test

import (
	"net/http"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

func TestMissingKey(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil)
	checkProblem(t, h.post("", `{}`), http.StatusBadRequest, idemop.CodeMissingKey)
	h.wantRuns(0)
}

func TestOptionalKeyRunsUnprotected(t *testing.T) {
	h := newHarness(t, idemop.Operation{Optional: true}, nil)
	for range 2 {
		if w := h.post("", `{}`); w.Code != http.StatusCreated {
			t.Fatalf("status = %d", w.Code)
		}
	}
	h.wantRuns(2)
	if h.store.count("acquire") != 0 {
		t.Error("an unprotected request reached the store")
	}
}

func TestInvalidKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		opts   []idem.Option
	}{
		{"empty", []string{""}, nil},
		{"empty sf-string", []string{`""`}, nil},
		{"too long", []string{strings.Repeat("a", 256)}, nil},
		{"too long quoted", []string{`"` + strings.Repeat("a", 256) + `"`}, nil},
		{"control byte", []string{"ab\x01c"}, nil},
		{"non-ascii", []string{"ключ"}, nil},
		{"unterminated", []string{`"abc`}, nil},
		{"bad escape", []string{`"a\b"`}, nil},
		{"trailing data", []string{`"abc" x`}, nil},
		{"list", []string{`"a", "b"`}, nil},
		{"two headers", []string{"a", "b"}, nil},
		{"bare token in strict mode", []string{"abc"}, []idem.Option{idem.WithStrictKeys(true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, idemop.Operation{}, nil, tc.opts...)
			r := engineReq("POST", "/pets", `{}`)
			r.Header["Idempotency-Key"] = tc.values
			checkProblem(t, h.do(r), http.StatusBadRequest, idemop.CodeInvalidKey)
			h.wantRuns(0)
		})
	}
}

func TestValidKeyForms(t *testing.T) {
	for _, tc := range []struct{ name, value, key string }{
		{"sf-string", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{"bare token", "8e03978e", "8e03978e"},
		{"escapes", `"a\"b\\c"`, `a"b\c`},
		{"spaces inside quotes", `" a b "`, " a b "},
		{"parameters", `"abc";v=1;flag`, "abc"},
		{"255 bytes", strings.Repeat("k", 255), strings.Repeat("k", 255)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
				info, _ := idem.FromContext(r.Context())
				got = info.Key
				w.WriteHeader(http.StatusCreated)
			})
			w := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", tc.value))
			if w.Code != http.StatusCreated || got != tc.key {
				t.Fatalf("status %d, key %q; want 201, %q (body %s)", w.Code, got, tc.key, w.Body)
			}
		})
	}
}

func TestCustomKeyHeader(t *testing.T) {
	h := newHarness(t, idemop.Operation{KeyHeader: "X-Request-Key"}, nil)
	checkProblem(t, h.post("k", `{}`), http.StatusBadRequest, idemop.CodeMissingKey)
	w := h.do(engineReq("POST", "/pets", `{}`, "x-request-key", "k"))
	if w.Code != http.StatusCreated {
		t.Fatalf("status = %d", w.Code)
	}
}

func TestPayloadTooLarge(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil, idem.WithBodyLimit(16))
	checkProblem(t, h.post("k", `{"name":"a very long name"}`), http.StatusRequestEntityTooLarge, idemop.CodePayloadTooLarge)

	// Without a Content-Length the limit still holds while reading.
	r := engineReq("POST", "/pets", "", "Idempotency-Key", "k")
	r.Body = plainReadCloser{strings.NewReader(strings.Repeat("x", 17))}
	r.ContentLength = -1
	checkProblem(t, h.do(r), http.StatusRequestEntityTooLarge, idemop.CodePayloadTooLarge)

	// At the limit the handler sees the whole body.
	w := h.post("k", `{"n":"12345678"}`)
	if w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `12345678`) {
		t.Fatalf("at the limit: %d %s", w.Code, w.Body)
	}
	h.wantRuns(1)
}

type plainReadCloser struct{ *strings.Reader }

func TestBodyKey(t *testing.T) {
	op := idemop.Operation{KeyPointer: "/idempotency_key"}
	h := newHarness(t, op, nil)
	first := h.do(engineReq("POST", "/pay", `{"idempotency_key":"k1","amount":1}`))
	if first.Code != http.StatusCreated {
		t.Fatalf("first = %d %s", first.Code, first.Body)
	}
	w := h.do(engineReq("POST", "/pay", `{ "amount": 1, "idempotency_key": "k1" }`))
	if w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("want a replay, got %d %s", w.Code, w.Body)
	}
	checkProblem(t, h.do(engineReq("POST", "/pay", `{"idempotency_key":"k1","amount":2}`)),
		http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
	checkProblem(t, h.do(engineReq("POST", "/pay", `{"amount":1}`)), http.StatusBadRequest, idemop.CodeMissingKey)
	checkProblem(t, h.do(engineReq("POST", "/pay", `{"idempotency_key":null}`)), http.StatusBadRequest, idemop.CodeMissingKey)
	checkProblem(t, h.do(engineReq("POST", "/pay", `not json`)), http.StatusBadRequest, idemop.CodeMissingKey)
	checkProblem(t, h.do(engineReq("POST", "/pay", `{"idempotency_key":7}`)), http.StatusBadRequest, idemop.CodeInvalidKey)
	checkProblem(t, h.do(engineReq("POST", "/pay", `{"idempotency_key":""}`)), http.StatusBadRequest, idemop.CodeInvalidKey)
	checkProblem(t, h.do(engineReq("POST", "/pay", `{"idempotency_key":"\u00e9"}`)), http.StatusBadRequest, idemop.CodeInvalidKey)
	h.wantRuns(1)

	opt := newHarness(t, idemop.Operation{KeyPointer: "/idempotency_key", Optional: true}, nil)
	for range 2 {
		if w := opt.do(engineReq("POST", "/pay", `{"amount":1}`)); !strings.Contains(w.Body.String(), `amount`) {
			t.Errorf("the unprotected handler did not see the body: %s", w.Body)
		}
	}
	opt.wantRuns(2)
}

// storedFirstWriter fails the test if the response reaches the client
// before the store holds it.

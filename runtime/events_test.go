package idem_test

import (
	"net/http"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// A composite body key (Adyen: pspReference and eventCode) deduplicates by
// all of its parts: the same parts replay, another part runs again, a part
// missing or of another type is refused, and the parts stay in the
// fingerprint.
func TestCompositeBodyKey(t *testing.T) {
	op := idemop.Operation{KeyPointers: []string{"/item/pspReference", "/item/eventCode"}}
	h := newHarness(t, op, nil)
	const first = `{"item":{"pspReference":"8815","eventCode":"AUTHORISATION","amount":1}}`
	if w := h.do(engineReq("POST", "/hooks", first)); w.Code != http.StatusCreated {
		t.Fatalf("first = %d %s", w.Code, w.Body)
	}
	w := h.do(engineReq("POST", "/hooks", `{"item":{"amount":1,"eventCode":"AUTHORISATION","pspReference":"8815"}}`))
	if w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("redelivery: want a replay, got %d %s", w.Code, w.Body)
	}
	if w := h.do(engineReq("POST", "/hooks", `{"item":{"pspReference":"8815","eventCode":"CAPTURE","amount":1}}`)); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
		t.Fatalf("another event code: want a run, got %d %s", w.Code, w.Body)
	}
	checkProblem(t, h.do(engineReq("POST", "/hooks", `{"item":{"pspReference":"8815","eventCode":"AUTHORISATION","amount":2}}`)),
		http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
	checkProblem(t, h.do(engineReq("POST", "/hooks", `{"item":{"pspReference":"8815"}}`)), http.StatusBadRequest, idemop.CodeMissingKey)
	checkProblem(t, h.do(engineReq("POST", "/hooks", `{"item":{"pspReference":"8815","eventCode":{}}}`)), http.StatusBadRequest, idemop.CodeInvalidKey)
	checkProblem(t, h.do(engineReq("POST", "/hooks", `not json`)), http.StatusBadRequest, idemop.CodeMissingKey)
	h.wantRuns(2)
}

// The parts of a composite key are joined so that no two lists of parts
// make one key: ["x:y","z"] and ["x","y:z"] are two events. (A number and
// the string of its digits are one part: the id 1 is the id "1".)
func TestCompositeKeyPartsDoNotCollide(t *testing.T) {
	h := newHarness(t, idemop.Operation{KeyPointers: []string{"/a", "/b"}}, nil)
	for _, body := range []string{`{"a":"x:y","b":"z"}`, `{"a":"x","b":"y:z"}`, `{"a":1,"b":"2"}`} {
		if w := h.do(engineReq("POST", "/hooks", body)); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
			t.Fatalf("%s: want a run, got %d %s", body, w.Code, w.Body)
		}
	}
	h.wantRuns(3)
}

// Two providers sending one id to one store are two events: the provider
// is part of the key space.
func TestProviderSeparatesKeySpaces(t *testing.T) {
	store := newMemStore()
	stripe := newHarnessOn(t, store, idemop.Operation{ID: "Event", KeyHeader: "webhook-id", Provider: "stripe"}, nil)
	resend := newHarnessOn(t, store, idemop.Operation{ID: "Event", KeyHeader: "webhook-id", Provider: "resend"}, nil)
	for _, h := range []*harness{stripe, resend, stripe, resend} {
		h.do(engineReq("POST", "/hooks", `{"n":1}`, "webhook-id", "msg_1"))
	}
	stripe.wantRuns(1)
	resend.wantRuns(1)
}

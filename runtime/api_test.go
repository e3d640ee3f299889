package idem_test

import (
	"net/http"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"

	"github.com/idemgen/idemgen/internal/redistest"
)

// TestAPIsSharingRedisKeepApart: two services whose specs both have
// CreateOrder share one Redis and one prefix. A client key that the first
// used is a first request for the second: it runs, and is not answered with
// the other service's stored body. Each API's retry replays its own.
func TestAPIsSharingRedisKeepApart(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	serve := func(api, body string) *harness {
		return newHarnessOn(t, redisstore.New(rdb, redisstore.WithPrefix(prefix)), idem.Operation{ID: "CreateOrder", API: api},
			func(h *harness, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(body))
			})
	}
	orders, billing := serve("orders-api", "order o1"), serve("billing-api", "invoice i1")
	for i := range 2 {
		if w := orders.post("k", `{}`); w.Body.String() != "order o1" {
			t.Fatalf("orders, request %d: %q", i+1, w.Body)
		}
		if w := billing.post("k", `{}`); w.Body.String() != "invoice i1" {
			t.Fatalf("billing, request %d: %q (%s), want its own answer", i+1, w.Body, w.Header().Get(idem.HeaderReplayed))
		}
	}
	orders.wantRuns(1)
	billing.wantRuns(1)

	// WithAPI overrides the generated identity: the same generated code
	// deployed as two services.
	other := newHarnessOn(t, redisstore.New(rdb, redisstore.WithPrefix(prefix)), idem.Operation{ID: "CreateOrder", API: "orders-api"},
		nil, idem.WithAPI("orders-eu"))
	if w := other.post("k", `{}`); w.Header().Get(idem.HeaderReplayed) != "" || w.Code != http.StatusCreated {
		t.Fatalf("WithAPI: %d replayed %q", w.Code, w.Header().Get(idem.HeaderReplayed))
	}
	other.wantRuns(1)
}

// TestRecordKeyIn: API and operation become one short token, so no API,
// op, scope and key split differently compose the same key, the key of a
// generated server stays in Redis's 64-byte class, and SplitRecordKey and
// SplitPreviousRecordKey each take apart only keys of their own layout.
func TestRecordKeyIn(t *testing.T) {
	seen := map[string][4]string{}
	for _, p := range [][4]string{
		{"", "a", "b", "c"}, {"a", "b", "", "c"}, {"a:b", "c", "", "d"}, {"a", "b:c", "", "d"}, {"x", "a", "b", "c"},
		{"a", "", "b", "c"}, {"", "a\nb", "", "c"}, {"a\nb", "", "", "c"}, {"x", "a", "b:c", "d"}, {"x", "a", "b", "c:d"},
	} {
		k := idem.RecordKeyIn(p[0], p[1], p[2], p[3])
		if other, dup := seen[k]; dup {
			t.Errorf("RecordKeyIn%q and %q collide: %q", p, other, k)
		}
		seen[k] = p
		token, scope, key, ok := idem.SplitRecordKey(k)
		if !ok || token != idem.OperationToken(p[0], p[1]) || scope != p[2] || key != p[3] {
			t.Errorf("SplitRecordKey(%q) = %q, %q, %q, %v; want %q, %q, %q", k, token, scope, key, ok, idem.OperationToken(p[0], p[1]), p[2], p[3])
		}
		if _, _, _, _, ok := idem.SplitPreviousRecordKey(k); ok {
			t.Errorf("SplitPreviousRecordKey(%q) splits a key of the current layout", k)
		}
		prev := idem.PreviousRecordKey(p[0], p[1], p[2], p[3])
		if api, op, scope, key, ok := idem.SplitPreviousRecordKey(prev); !ok || [4]string{api, op, scope, key} != p {
			t.Errorf("SplitPreviousRecordKey(%q) = %q, %q, %q, %q, %v; want %q", prev, api, op, scope, key, ok, p)
		}
		if _, _, _, ok := idem.SplitRecordKey(prev); ok {
			t.Errorf("SplitRecordKey(%q) splits a key of the previous layout", prev)
		}
	}
	for _, k := range []string{"a:b", "a", "a:b:c:d:e", `a\:b:c`, "~abc:s:k", "~abcdefgh:s", "~abcdefgh:s:k:l"} {
		if _, _, _, ok := idem.SplitRecordKey(k); ok {
			t.Errorf("SplitRecordKey(%q) splits a key RecordKeyIn never composes", k)
		}
	}
	if got, want := idem.RecordKeyIn("", "CreatePet", "s", "k"), idem.RecordKey("CreatePet", "s", "k"); got != want {
		t.Errorf("without an API: %q, want %q", got, want)
	}
	if got, want := idem.PreviousRecordKey("", "CreatePet", "s", "k"), "CreatePet:s:k"; got != want {
		t.Errorf("PreviousRecordKey without an API = %q, want the layout before API identities, %q", got, want)
	}
	if got, want := idem.PreviousRecordKey("petstore", "CreatePet", "", "k"), "petstore:CreatePet::k"; got != want {
		t.Errorf("PreviousRecordKey = %q, want %q", got, want)
	}
	// The petstore's own names and a UUID key: "idem:" + the key must stay
	// at 60 bytes or less, which Redis keeps in its 64-byte size class.
	k := "idem:" + idem.RecordKeyIn("petstore-with-safe-retries", "CreatePet", "", "0199c6d2-7b1e-7cc4-9a43-000000000001")
	if len(k) > 60 {
		t.Errorf("%q is %d bytes, want at most 60", k, len(k))
	}
}

package idem_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// securedOp declares an API key in the X-API-Key header, as generated code
// does for a spec whose operation requires that scheme.
func securedOp(id string) *idemop.Operation {
	return &idemop.Operation{ID: id, Security: []idemop.Security{{Scheme: "ApiKeyAuth", Type: "apiKey", In: "header", Name: "X-API-Key"}}}
}

var testScopeSecret = []byte("0123456789abcdef0123456789abcdef")

// mustPanic runs f and returns what it panicked with ("" if it did not).
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg = r.(string)
		}
	}()
	f()
	return ""
}

// TestSecuredOperationNeedsScopeChoice: an engine for operations that
// declare security does not start with a shared key space unless told to;
// the start-up failure says what to add.
func TestSecuredOperationNeedsScopeChoice(t *testing.T) {
	ops := []*idemop.Operation{securedOp("CreateOrder"), {ID: "Open"}, securedOp("ShipOrder")}
	msg := mustPanic(t, func() { idemgen.NewEngineFor(ops, newMemStore()) })
	for _, want := range []string{"CreateOrder", "ShipOrder", "X-API-Key", `idem.WithScopeFromHeader("X-API-Key")`,
		"idem.WithScopeSecret", "idem.WithScope(", "idem.WithSharedKeySpace()"} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "Open") {
		t.Errorf("panic %q names an operation without security", msg)
	}
	for name, opts := range map[string][]idem.Option{
		"shared":      {idem.WithSharedKeySpace()},
		"scope":       {idem.WithScope(func(r *http.Request) (string, error) { return "t", nil })},
		"from header": {idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret(testScopeSecret)},
	} {
		if msg := mustPanic(t, func() { idemgen.NewEngineFor(ops, newMemStore(), opts...) }); msg != "" {
			t.Errorf("%s: panic %q", name, msg)
		}
	}
	if msg := mustPanic(t, func() { idemgen.NewEngineFor([]*idemop.Operation{{ID: "Open"}}, newMemStore()) }); msg != "" {
		t.Errorf("no security declared: panic %q", msg)
	}
	if msg := mustPanic(t, func() { idem.NewEngine(newMemStore()).Middleware(*securedOp("Refund")) }); !strings.Contains(msg, "Refund") {
		t.Errorf("Middleware for a secured operation without a scope choice: panic %q", msg)
	}
	if msg := mustPanic(t, func() { idem.NewEngine(newMemStore(), idem.WithScopeFromHeader("X-API-Key")) }); !strings.Contains(msg, "idem.WithScopeSecret") {
		t.Errorf("WithScopeFromHeader without a secret: panic %q", msg)
	}
	if msg := mustPanic(t, func() { idemgen.NewEngineFor(ops, newMemStore(), idem.WithScope(nil)) }); !strings.Contains(msg, "WithScope(nil)") {
		t.Errorf("WithScope(nil): panic %q", msg)
	}
	if msg := mustPanic(t, func() { idem.NewEngine(newMemStore(), idem.WithScopeSecret([]byte("short"))) }); !strings.Contains(msg, "16 bytes") {
		t.Errorf("short secret: panic %q", msg)
	}
	for _, empty := range [][]byte{[]byte(""), nil} {
		msg := mustPanic(t, func() {
			idem.NewEngine(newMemStore(), idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret(empty))
		})
		if !strings.Contains(msg, "WithScopeSecret: the secret is empty") || strings.Contains(msg, "add idem.WithScopeSecret") {
			t.Errorf("WithScopeSecret(%#v): panic %q, want it to say the secret is empty", empty, msg)
		}
	}
	if msg := mustPanic(t, func() {
		idem.NewEngine(newMemStore(), idem.WithSharedKeySpace(), idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret(testScopeSecret))
	}); !strings.Contains(msg, "WithSharedKeySpace") {
		t.Errorf("shared and scoped at once: panic %q", msg)
	}
}

// TestScopeFromHeader: two API keys sending the same idempotency key and
// body each get their own run; the API key is in no storage key and no log
// line.
func TestScopeFromHeader(t *testing.T) {
	const keyA, keyB = "sk_live_tenantA_4711", "sk_live_tenantB_0815"
	var logs bytes.Buffer
	store := newMemStore()
	op := securedOp("CreatePet")
	h := newHarnessOn(t, store, *op, nil, idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret(testScopeSecret),
		idem.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	send := func(apiKey string) string {
		w := h.do(engineReq("POST", "/pets", `{"name":"Rex"}`, "Idempotency-Key", "k", "X-API-Key", apiKey))
		if w.Code != http.StatusCreated {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		return w.Header().Get(idemop.HeaderReplayed)
	}
	if send(keyA) != "" || send(keyB) != "" {
		t.Fatal("one tenant replayed another's response")
	}
	h.wantRuns(2)
	if send(keyA) != "true" || send(keyB) != "true" {
		t.Error("a tenant's retry was not replayed")
	}
	h.wantRuns(2)
	store.setErr(errStoreDown) // a log line with the key hash
	h.do(engineReq("POST", "/pets", `{"name":"Rex"}`, "Idempotency-Key", "k", "X-API-Key", keyA))
	keys := store.keys()
	if len(keys) != 2 {
		t.Errorf("storage keys %q, want one per tenant", keys)
	}
	for _, k := range keys {
		for _, secret := range []string{keyA, keyB, "tenantA", "tenantB"} {
			if strings.Contains(k, secret) {
				t.Errorf("storage key %q holds the credential", k)
			}
		}
	}
	if logs.Len() == 0 || strings.Contains(logs.String(), "tenant") {
		t.Errorf("logs: %s", logs.String())
	}
}

// TestScopeHashedAndKeyed: a scope never reaches the store in the clear,
// and the secret decides its hash, so key names reveal nothing to whoever
// lacks the secret.
func TestScopeHashedAndKeyed(t *testing.T) {
	keysWith := func(opts ...idem.Option) []string {
		store := newMemStore()
		opts = append(opts, idem.WithScope(func(r *http.Request) (string, error) { return "acme:corp", nil }))
		h := newHarnessOn(t, store, idemop.Operation{}, nil, opts...)
		h.post("k", `{}`)
		return store.keys()
	}
	plain, keyed, other := keysWith(), keysWith(idem.WithScopeSecret(testScopeSecret)),
		keysWith(idem.WithScopeSecret([]byte("another secret of 32 bytes......")))
	for _, k := range append(append(plain, keyed...), other...) {
		if strings.Contains(k, "acme") {
			t.Errorf("storage key %q holds the scope in the clear", k)
		}
	}
	if plain[0] == keyed[0] || keyed[0] == other[0] {
		t.Errorf("storage keys %q, %q, %q: the secret changes nothing", plain, keyed, other)
	}
}

// TestScopePrincipalSurvivesTokenRotation: scoped by the principal a token
// stands for, a retry sent with a refreshed token is still a retry.
func TestScopePrincipalSurvivesTokenRotation(t *testing.T) {
	principals := map[string]string{"Bearer t1": "alice", "Bearer t2": "alice", "Bearer t3": "bob"}
	h := newHarness(t, idemop.Operation{}, nil, idem.WithScope(func(r *http.Request) (string, error) {
		return principals[r.Header.Get("Authorization")], nil
	}))
	send := func(token string) string {
		return h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "Authorization", token)).Header().Get(idemop.HeaderReplayed)
	}
	if send("Bearer t1") != "" || send("Bearer t2") != "true" || send("Bearer t3") != "" {
		t.Error("want: alice runs, alice's retry with a rotated token replays, bob runs")
	}
	h.wantRuns(2)
}

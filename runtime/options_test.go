package idem_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestHooksAndRedactedLogs(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	rec := func(name string) func(context.Context, idem.Event) {
		return func(_ context.Context, ev idem.Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Operation != "CreatePet" || len(ev.KeyHash) != 12 {
				t.Errorf("%s event = %+v", name, ev)
			}
			seen[name]++
		}
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Idempotency-Key"), "fail") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		createHandler(h, w, r)
	}, idem.WithLogger(logger), idem.WithHooks(idem.Hooks{
		FirstRun: rec("acquired"), Replayed: rec("replayed"), Mismatch: rec("mismatch"),
		Completed: rec("completed"), Released: rec("released"), StoreError: rec("store-error"),
	}))
	const secret = "secret-key-4711"
	h.post(secret, `{}`)
	h.post(secret, `{}`)
	h.post(secret, `{"other":1}`)
	h.post(secret+"-fail", `{}`)
	h.store.setErr(errStoreDown)
	h.post(secret, `{}`)
	want := map[string]int{"acquired": 2, "completed": 1, "replayed": 1, "mismatch": 1, "released": 1, "store-error": 1}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("hook %s ran %d times, want %d (all: %v)", k, seen[k], v, seen)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the key leaked into the logs: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "key_hash="+idem.KeyHash(idemstore.RecordKey("CreatePet", "", secret))) {
		t.Errorf("logs lack the key hash: %s", logs.String())
	}
}

func TestScope(t *testing.T) {
	scope := idem.WithScope(func(r *http.Request) (string, error) {
		switch tenant := r.Header.Get("X-Tenant"); tenant {
		case "":
			return "", idem.NewProblem(http.StatusUnauthorized, "unauthenticated", "no tenant")
		case "broken":
			return "", errors.New("directory down")
		default:
			return tenant, nil
		}
	})
	h := newHarness(t, idemop.Operation{}, nil, scope)
	a := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "X-Tenant", "a"))
	b := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "X-Tenant", "b"))
	if a.Header().Get(idemop.HeaderReplayed) != "" || b.Header().Get(idemop.HeaderReplayed) != "" {
		t.Fatal("one tenant replayed another's response")
	}
	h.wantRuns(2)
	if w := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "X-Tenant", "a")); w.Body.String() != a.Body.String() {
		t.Errorf("tenant a replay = %s, want %s", w.Body, a.Body)
	}
	checkProblem(t, h.post("k", `{}`), http.StatusUnauthorized, "unauthenticated")
	checkProblem(t, h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "X-Tenant", "broken")),
		http.StatusInternalServerError, idemop.CodeScopeFailed)
}

func TestMiddleware(t *testing.T) {
	store := newMemStore()
	var runs atomic.Int64
	mux := http.NewServeMux()
	mw := idem.NewEngine(store).Middleware(idemop.Operation{ID: "Ship"})
	mux.Handle("POST /orders/{id}/ship", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(r.PathValue("id")))
	})))
	send := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, engineReq("POST", path, "", "Idempotency-Key", "k"))
		return w
	}
	send("/orders/1/ship")
	if w := send("/orders/1/ship"); w.Code != http.StatusAccepted || w.Body.String() != "1" || w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("replay = %d %q", w.Code, w.Body)
	}
	checkProblem(t, send("/orders/2/ship"), http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
	if runs.Load() != 1 {
		t.Errorf("runs = %d", runs.Load())
	}
}

type storedFirstWriter struct {
	*httptest.ResponseRecorder
	t     *testing.T
	store *memStore
	key   string
}

func TestStoredBeforeWritten(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the recorder: %v", err)
		}
		createHandler(h, w, r)
	})
	w := storedFirstWriter{httptest.NewRecorder(), t, h.store, idemstore.RecordKey("CreatePet", "", "k")}
	h.h.ServeHTTP(w, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k"))
	if w.Code != http.StatusCreated || w.Flushed {
		t.Fatalf("status %d, flushed early %v", w.Code, w.Flushed)
	}
}

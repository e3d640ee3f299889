package idem_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestFirstRequestRunsOnceAndStores(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil)
	w := h.post("k1", `{"name":"rex"}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("status = %d, body %s", w.Code, w.Body)
	}
	if w.Header().Get("Set-Cookie") == "" {
		t.Error("the first answer lost its own Set-Cookie")
	}
	if w.Header().Get(idemop.HeaderReplayed) != "" {
		t.Error("first answer marked as replayed")
	}
	h.wantRuns(1)
	rec, ok := h.store.get(idemstore.RecordKey("CreatePet", "", "k1"))
	if !ok || !rec.completed || rec.record.Status != http.StatusCreated {
		t.Fatalf("stored record = %+v, %v", rec, ok)
	}
	if !bytes.Equal(rec.record.Body, w.Body.Bytes()) {
		t.Errorf("stored body %q, answered %q", rec.record.Body, w.Body)
	}
	if got := h.store.count("acquire") + h.store.count("complete"); got != 2 {
		t.Errorf("store calls = %d, want 2 (acquire, complete)", got)
	}
}

func TestReplay(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil)
	first := h.post("k1", `{"name":"rex"}`)
	acquires := h.store.count("acquire")
	w := h.post("k1", `{"name":"rex"}`)
	h.wantRuns(1)
	if w.Code != first.Code || w.Body.String() != first.Body.String() {
		t.Errorf("replay = %d %q, want %d %q", w.Code, w.Body, first.Code, first.Body)
	}
	for name, want := range map[string]string{
		idemop.HeaderReplayed: "true",
		"Location":            "/pets/1",
		"Content-Type":        "application/json",
		"Set-Cookie":          "",
		"X-Unlisted":          "",
	} {
		if got := w.Header().Get(name); got != want {
			t.Errorf("replayed %s = %q, want %q", name, got, want)
		}
	}
	if got := h.store.count("acquire") - acquires; got != 1 || h.store.count("complete") != 1 {
		t.Errorf("a replay cost %d acquires and completes %d, want 1 and 1 in all", got, h.store.count("complete"))
	}
}

func TestReplayHeadersOption(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil, idem.WithReplayHeaders("x-unlisted", "Set-Cookie", "Connection"))
	h.post("k1", `{}`)
	w := h.post("k1", `{}`)
	if w.Header().Get("X-Unlisted") != "yes" {
		t.Error("WithReplayHeaders header not replayed")
	}
	if w.Header().Get("Set-Cookie") != "" {
		t.Error("Set-Cookie replayed although it is never stored")
	}
}

func (plainReadCloser) Close() error { return nil }

func TestFingerprintMismatch(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil)
	h.post("k", `{"name":"rex"}`)
	key := idemstore.RecordKey("CreatePet", "", "k")
	before, _ := h.store.get(key)
	checkProblem(t, h.post("k", `{"name":"fido"}`), http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
	after, _ := h.store.get(key)
	if before.fingerprint != after.fingerprint || !bytes.Equal(before.record.Body, after.record.Body) || after.fence != before.fence {
		t.Error("a mismatch changed the stored record")
	}
	h.wantRuns(1)
}

func TestMismatchWhileInProgress(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		w.WriteHeader(http.StatusCreated)
	})
	done := make(chan struct{})
	go func() { defer close(done); h.post("k", `{"a":1}`) }()
	<-started
	checkProblem(t, h.post("k", `{"a":2}`), http.StatusUnprocessableEntity, idemop.CodeFingerprintMismatch)
	close(release)
	<-done
}

func TestConflictWhileOriginalRuns(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, idemop.Operation{Lock: 10 * time.Second}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		w.WriteHeader(http.StatusCreated)
	})
	done := make(chan struct{})
	go func() { defer close(done); h.post("k", `{}`) }()
	<-started
	w := h.post("k", `{}`)
	checkProblem(t, w, http.StatusConflict, idemop.CodeConflict)
	if s := retryAfterSeconds(t, w); s < 1 || s > 10 {
		t.Errorf("Retry-After = %d, want 1..10 (the remaining lease)", s)
	}
	close(release)
	<-done
	if w := h.post("k", `{}`); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Errorf("after completion: %d, replayed %q", w.Code, w.Header().Get(idemop.HeaderReplayed))
	}
	h.wantRuns(1)
}

func TestStoredAndReleasedStatuses(t *testing.T) {
	stores500 := idemop.Operation{Final: []string{"2xx", "3xx", "4xx", "500"}}
	keeps402Out := idemop.Operation{Transient: []int{402}}
	only2xx := idemop.Operation{Final: []string{"2xx"}}
	for _, tc := range []struct {
		policy string
		op     idemop.Operation
		status int
		stored bool
	}{
		{"default", idemop.Operation{}, 200, true}, {"default", idemop.Operation{}, 201, true},
		{"default", idemop.Operation{}, 202, true}, {"default", idemop.Operation{}, 204, true},
		{"default", idemop.Operation{}, 303, true},
		{"default", idemop.Operation{}, 400, true}, {"default", idemop.Operation{}, 402, true},
		{"default", idemop.Operation{}, 404, true}, {"default", idemop.Operation{}, 422, true},
		{"default", idemop.Operation{}, 408, false}, {"default", idemop.Operation{}, 409, false},
		{"default", idemop.Operation{}, 425, false}, {"default", idemop.Operation{}, 429, false},
		{"default", idemop.Operation{}, 500, false}, {"default", idemop.Operation{}, 502, false},
		{"default", idemop.Operation{}, 503, false},
		{"final 500", stores500, 500, true}, {"final 500", stores500, 503, false},
		{"final 500", stores500, 201, true}, {"final 500", stores500, 409, false},
		{"transient 402", keeps402Out, 402, false}, {"transient 402", keeps402Out, 400, true},
		{"transient 402", keeps402Out, 201, true}, {"transient 402", keeps402Out, 500, false},
		{"final 2xx", only2xx, 201, true}, {"final 2xx", only2xx, 404, false},
		{"final 5xx", idemop.Operation{Final: []string{"5xx"}}, 503, true},
		{"final 4xx", idemop.Operation{Final: []string{"4xx"}}, 429, false},
	} {
		t.Run(tc.policy+"/"+http.StatusText(tc.status), func(t *testing.T) {
			h := newHarness(t, tc.op, func(h *harness, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
			})
			if w := h.post("k", `{}`); w.Code != tc.status {
				t.Fatalf("first status = %d", w.Code)
			}
			w := h.post("k", `{}`)
			if w.Code != tc.status {
				t.Fatalf("second status = %d", w.Code)
			}
			if tc.stored {
				h.wantRuns(1)
				if w.Header().Get(idemop.HeaderReplayed) != "true" {
					t.Error("second answer is not a replay")
				}
			} else {
				h.wantRuns(2) // released: the retry ran again
			}
		})
	}
}

func TestHandlerWithoutWriteStores200(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {})
	h.post("k", `{}`)
	if w := h.post("k", `{}`); w.Code != http.StatusOK || w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("replay = %d", w.Code)
	}
}

func TestPanicReleasesAndRepanics(t *testing.T) {
	boom := true
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if boom {
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	})
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the handler's panic", v)
			}
		}()
		h.post("k", `{}`)
		t.Fatal("the panic was swallowed")
	}()
	if _, ok := h.store.get(idemstore.RecordKey("CreatePet", "", "k")); ok {
		t.Fatal("the lease survived the panic")
	}
	if h.store.count("release") != 1 {
		t.Errorf("release calls = %d", h.store.count("release"))
	}
	boom = false
	if w := h.post("k", `{}`); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
		t.Fatalf("retry after panic: %d", w.Code)
	}
	h.wantRuns(2)
}

func TestCancelledRequestReleases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if h.runs.Load() == 1 {
			cancel() // the client hangs up; the handler gives up without answering
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	w := h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k").WithContext(ctx))
	checkProblem(t, w, http.StatusServiceUnavailable, idemop.CodeRequestCancelled)
	if _, ok := h.store.get(idemstore.RecordKey("CreatePet", "", "k")); ok {
		t.Fatal("the lease survived the cancelled request")
	}
	if w := h.post("k", `{}`); w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderReplayed) != "" {
		t.Fatalf("retry: %d", w.Code)
	}
	h.wantRuns(2)
}

func TestCancelledAfterAnswerStores(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		cancel() // the answer exists; the client leaving now must not undo it
	})
	h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k").WithContext(ctx))
	if w := h.post("k", `{}`); w.Header().Get(idemop.HeaderReplayed) != "true" {
		t.Fatalf("not replayed: %d", w.Code)
	}
	h.wantRuns(1)
}

func TestStoreUnavailable(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil)
	h.store.setErr(errStoreDown)
	w := h.post("k", `{}`)
	checkProblem(t, w, http.StatusServiceUnavailable, idemop.CodeStoreUnavailable)
	if w.Header().Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", w.Header().Get("Retry-After"))
	}
	h.wantRuns(0)
	h.store.setErr(nil)
	if w := h.post("k", `{}`); w.Code != http.StatusCreated {
		t.Fatalf("after recovery: %d", w.Code)
	}
}

func TestFailOpen(t *testing.T) {
	h := newHarness(t, idemop.Operation{}, nil, idem.WithFailOpen(true))
	h.store.setErr(errStoreDown)
	for range 2 {
		w := h.post("k", `{"a":1}`)
		if w.Code != http.StatusCreated || w.Header().Get(idemop.HeaderDegraded) != "true" {
			t.Fatalf("fail-open: %d, degraded %q", w.Code, w.Header().Get(idemop.HeaderDegraded))
		}
		if !strings.Contains(w.Body.String(), `{\"a\":1}`) {
			t.Errorf("the handler did not see the body: %s", w.Body)
		}
	}
	h.wantRuns(2)
}

func TestStoredBodyLimit(t *testing.T) {
	big := strings.Repeat("x", 100)
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(big))
	}, idem.WithStoredBodyLimit(10))
	if w := h.post("k", `{}`); w.Body.String() != big {
		t.Fatalf("the first answer lost its body: %q", w.Body)
	}
	w := h.post("k", `{}`)
	if w.Code != http.StatusCreated || w.Body.Len() != 0 || w.Header().Get(idemop.HeaderBodyOmitted) != "true" ||
		w.Header().Get("Content-Type") != "text/plain" {
		t.Fatalf("replay = %d %q %v", w.Code, w.Body, w.Header())
	}
	h.wantRuns(1)
}

package idem_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// TestConflictRetryAfterFromRunTimes: a 409's Retry-After estimates when the
// original finishes from the operation's recent run times (a 300 ms handler:
// 1 s), not from its 30 s lease; and the client helper waits at least that
// long before its retry, which then gets the replay.
func TestConflictRetryAfterFromRunTimes(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Block") != "" {
			close(started)
			<-release
		} else {
			time.Sleep(300 * time.Millisecond) // the handler's work, not synchronisation
		}
		w.WriteHeader(http.StatusCreated)
	})
	if w := h.post("warm", `{}`); w.Code != http.StatusCreated {
		t.Fatalf("first run: %d %s", w.Code, w.Body)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		h.do(engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k", "X-Block", "1"))
	}()
	<-started
	w := h.post("k", `{}`)
	checkProblem(t, w, http.StatusConflict, idemop.CodeConflict)
	if s := retryAfterSeconds(t, w); s != 1 {
		t.Errorf("Retry-After = %d, want 1 (a 300 ms operation, a 30 s lease)", s)
	}

	// The client helper: its first attempt gets the 409; it waits what the
	// server asked (the fake sleep lets the original finish meanwhile) and
	// its retry gets the replay.
	srv := httptest.NewServer(h.h)
	defer srv.Close()
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		close(release)
		<-done
		return nil
	}
	var res idem.CallResult
	call := idem.NewCaller(idem.WithClock(time.Now, sleep)).Begin(createPet, idem.WithKey("k"), idem.WithResult(&res))
	if err := call.Run(context.Background(), sender(srv.Client(), srv.URL+"/pets", call, []byte(`{}`))); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(waits) != 1 || waits[0] < time.Second {
		t.Errorf("client waits %v, want one of at least 1s (the Retry-After)", waits)
	}
	if res.Attempts != 2 || !res.Replayed || res.Status != http.StatusCreated {
		t.Errorf("result %+v, want the replay on the second attempt", res)
	}
	h.wantRuns(2)
}

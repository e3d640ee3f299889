package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// unreplicatedStore stores completions like memStore but reports each as
// not acknowledged by a replica, as redisstore does when WAIT times out.
type unreplicatedStore struct{ *memStore }

func (s unreplicatedStore) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	if err := s.memStore.Complete(ctx, key, token, rec, retention); err != nil {
		return err
	}
	return fmt.Errorf("0 of 1 replicas acknowledged it: %w", idemstore.ErrUnreplicated)
}

// TestUnreplicatedCompletion: a completion the store kept but could not
// confirm is answered with the handler's response marked
// Idempotency-Degraded by the plain and the strict server, reported to
// Hooks.Unreplicated (not Completed) with that response, and replayed
// unmarked by a retry, since the record is stored; Do returns the result
// and reports it the same way. The handler runs once per key.
func TestUnreplicatedCompletion(t *testing.T) {
	var completed, unreplicated atomic.Int64
	hooks := idem.Hooks{
		Completed: func(context.Context, idem.Event) { completed.Add(1) },
		Unreplicated: func(_ context.Context, ev idem.Event) {
			if !errors.Is(ev.Err, idemstore.ErrUnreplicated) || ev.Response == nil || ev.Status != ev.Response.Status || ev.Fence != 1 {
				t.Errorf("Unreplicated event %+v; want ErrUnreplicated, the response and its status, fence 1", ev)
			}
			unreplicated.Add(1)
		},
	}
	e := idem.NewEngine(unreplicatedStore{newMemStore()}, idem.WithHooks(hooks))
	op := &idemop.Operation{ID: "CreatePet", Method: http.MethodPost, Path: "/pets"}
	var runs atomic.Int64
	h := e.Middleware(*op)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	for i, want := range []string{idemop.HeaderDegraded, idemop.HeaderReplayed} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, engineReq("POST", "/pets", `{"name":"rex"}`, "Idempotency-Key", "plain"))
		if w.Code != http.StatusCreated || w.Header().Get(want) != "true" || (i == 1 && w.Header().Get(idemop.HeaderDegraded) != "") {
			t.Errorf("plain, request %d: %d %v; want 201 with %s", i+1, w.Code, w.Header(), want)
		}
	}
	var strictRuns atomic.Int64
	resp, err := strictServe(e, engineReq("POST", "/pets", `{"name":"rex"}`, "Idempotency-Key", "strict"), op, strictRun(&strictRuns))
	if err != nil || resp.Status != http.StatusCreated || resp.Header.Get(idemop.HeaderDegraded) != "true" {
		t.Errorf("strict: %+v, %v; want 201 marked degraded", resp, err)
	}
	result, replayed, err := e.Do(context.Background(), op, "do", []byte(`{}`), func(context.Context) ([]byte, error) {
		runs.Add(1)
		return []byte(`{"ok":true}`), nil
	})
	if err != nil || replayed || string(result) != `{"ok":true}` {
		t.Errorf("Do: %s, %v, %v; want the result, not replayed", result, replayed, err)
	}
	if runs.Load() != 2 || strictRuns.Load() != 1 || completed.Load() != 0 || unreplicated.Load() != 3 {
		t.Errorf("runs %d+%d, Completed %d, Unreplicated %d; want 2+1, 0, 3", runs.Load(), strictRuns.Load(), completed.Load(), unreplicated.Load())
	}
}

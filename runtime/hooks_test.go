package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// stepKey marks the contexts the step hooks return, to prove the engine
// passes them on.
type stepKey struct{}

// stepLog records the StoreCall and Handler steps as "start ..." and
// "end ..." lines.
type stepLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *stepLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *stepLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

func (l *stepLog) hooks(t *testing.T) idem.Hooks {
	check := func(ev idem.Event) {
		if ev.Operation != "CreatePet" || len(ev.KeyHash) != 12 {
			t.Errorf("step event without operation or key hash: %+v", ev)
		}
	}
	errText := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, idemstore.ErrNotOwner):
			return "not-owner"
		case errors.Is(err, idemstore.ErrStoreUnavailable):
			return "unavailable"
		}
		return "error"
	}
	return idem.Hooks{
		StoreCall: func(ctx context.Context, ev idem.Event) (context.Context, func(idem.Event)) {
			check(ev)
			l.add("start %s fence=%d", ev.Call, ev.Fence)
			return context.WithValue(ctx, stepKey{}, ev.Call), func(end idem.Event) {
				check(end)
				l.add("end %s fence=%d outcome=%d status=%d %s", end.Call, end.Fence, end.Outcome, end.Status, errText(end.Err))
			}
		},
		Handler: func(ctx context.Context, ev idem.Event) (context.Context, func(idem.Event)) {
			check(ev)
			l.add("start handler fence=%d", ev.Fence)
			return context.WithValue(ctx, stepKey{}, "handler"), func(end idem.Event) {
				check(end)
				l.add("end handler status=%d %s", end.Status, errText(end.Err))
			}
		},
	}
}

func TestStepHooks(t *testing.T) {
	var log stepLog
	h := newHarness(t, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(stepKey{}) != "handler" {
			t.Errorf("the handler does not run in the Handler hook's context")
		}
		switch {
		case strings.Contains(r.Header.Get("Idempotency-Key"), "fail"):
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.Contains(r.Header.Get("Idempotency-Key"), "panic"):
			panic("boom")
		default:
			createHandler(h, w, r)
		}
	}, idem.WithHeartbeat(false), idem.WithHooks(log.hooks(t)))

	acquired := fmt.Sprintf("end acquire fence=1 outcome=%d status=0 ok", idemstore.OutcomeFirstRun)
	for _, tc := range []struct {
		name, key, body string
		want            []string
	}{
		{"first run", "k1", `{}`, []string{
			"start acquire fence=0", acquired,
			"start handler fence=1", "end handler status=201 ok",
			"start complete fence=1", "end complete fence=1 outcome=0 status=201 ok",
		}},
		{"replay", "k1", `{}`, []string{
			"start acquire fence=0", fmt.Sprintf("end acquire fence=0 outcome=%d status=0 ok", idemstore.OutcomeReplay),
		}},
		{"mismatch", "k1", `{"other":1}`, []string{
			"start acquire fence=0", fmt.Sprintf("end acquire fence=0 outcome=%d status=0 ok", idemstore.OutcomeMismatch),
		}},
		{"released", "k-fail", `{}`, []string{
			"start acquire fence=0", acquired,
			"start handler fence=1", "end handler status=503 ok",
			"start release fence=1", "end release fence=1 outcome=0 status=0 ok",
		}},
		{"panic", "k-panic", `{}`, []string{
			"start acquire fence=0", acquired,
			"start handler fence=1", "end handler status=0 error",
			"start release fence=1", "end release fence=1 outcome=0 status=0 ok",
		}},
	} {
		func() {
			defer func() { _ = recover() }() // the panicking handler's panic goes on
			h.post(tc.key, tc.body)
		}()
		if got := log.take(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: steps\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}

	h.store.setErr(errStoreDown)
	h.post("k2", `{}`)
	want := []string{"start acquire fence=0", "end acquire fence=0 outcome=0 status=0 unavailable"}
	if got := log.take(); !slices.Equal(got, want) {
		t.Errorf("store down: steps %q, want %q", got, want)
	}
}

// TestStepHooksStoreContext: the store receives the StoreCall hook's context
// (so a span started there is the parent of the store's own spans).
func TestStepHooksStoreContext(t *testing.T) {
	store := &contextStore{Store: newMemStore()}
	var log stepLog
	h := newHarnessOn(t, store, idemop.Operation{}, nil, idem.WithHeartbeat(false), idem.WithHooks(log.hooks(t)))
	h.post("k1", `{}`)
	if want := []string{"acquire", "complete"}; !slices.Equal(store.calls, want) {
		t.Errorf("store saw the hook's context in %q, want %q", store.calls, want)
	}
}

// contextStore records the StoreCall value of each call's context.
type contextStore struct {
	idemstore.Store
	calls []string
}

func (s *contextStore) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.calls = append(s.calls, fmt.Sprint(ctx.Value(stepKey{})))
	return s.Store.Acquire(ctx, req)
}

func (s *contextStore) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	s.calls = append(s.calls, fmt.Sprint(ctx.Value(stepKey{})))
	return s.Store.Complete(ctx, key, token, rec, retention)
}

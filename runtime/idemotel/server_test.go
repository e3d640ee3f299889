package idemotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemotel"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// Keys of the scenario: distinctive, so the test can prove they never reach
// an attribute.
const (
	keyFirst = "key-first-5d1c"
	keyFail  = "key-fail-77ab"
	keyHold  = "key-hold-90e2"
	keyDown  = "key-down-3b4f"
)

// outage is a store that fails every acquire while down is set, as a store
// whose server went away does.
type outage struct {
	*memstore.Store
	down atomic.Bool
}

func (o *outage) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	if o.down.Load() {
		return idemstore.Acquisition{}, &idemstore.StoreError{Op: "acquire", Err: errors.New("the store's server went away")}
	}
	return o.Store.Acquire(ctx, req)
}

// TestServerInstruments runs one request of every outcome through an engine
// with NewHooks and checks what the SDK recorded.
func TestServerInstruments(t *testing.T) {
	tel := newTelemetry(t)
	hooks, err := idemotel.NewHooks(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	store := &outage{Store: memstore.New()}

	entered, release := make(chan struct{}), make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Idempotency-Key") {
		case keyFail:
			w.WriteHeader(http.StatusInternalServerError)
			return
		case keyHold:
			close(entered)
			<-release
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1}`)
	})
	protected := idem.NewEngine(store, idem.WithHooks(hooks), idem.WithHeartbeat(false)).
		Middleware(idemop.Operation{ID: "createPet"})(handler)
	// Each request runs in a span of its own, as otelhttp would start it.
	tracer := tel.tp.Tracer("test")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), "POST /pets", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		protected.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	post := func(key, body string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	for _, s := range []struct {
		key, body string
		want      int
	}{
		{keyFirst, `{}`, 201},      // first_run, completed
		{keyFirst, `{}`, 201},      // replay
		{keyFirst, `{"x":1}`, 422}, // mismatch
		{keyFail, `{}`, 500},       // first_run, released
	} {
		if got := post(s.key, s.body); got != s.want {
			t.Fatalf("POST %s %s = %d, want %d", s.key, s.body, got, s.want)
		}
	}
	held := make(chan int)
	go func() { held <- post(keyHold, `{}`) }() // first_run, completed
	<-entered
	if got := post(keyHold, `{}`); got != 409 { // conflict
		t.Fatalf("duplicate while the original runs = %d, want 409", got)
	}
	close(release)
	if got := <-held; got != 201 {
		t.Fatalf("held request = %d, want 201", got)
	}
	store.down.Store(true)
	if got := post(keyDown, `{}`); got != 503 { // store_error
		t.Fatalf("POST with Redis down = %d, want 503", got)
	}

	tel.wantCounts(t, "idem.server.outcomes", []countRow{
		{map[string]string{"idem.operation": "createPet"}, 10},
		{map[string]string{"idem.outcome": idemotel.OutcomeFirstRun}, 3},
		{map[string]string{"idem.outcome": idemotel.OutcomeCompleted}, 2},
		{map[string]string{"idem.outcome": idemotel.OutcomeReplay}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeMismatch}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeReleased}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeConflict}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeStoreError}, 1},
	})
	tel.wantCounts(t, "idem.store.duration", []countRow{
		{map[string]string{"idem.store.call": "acquire"}, 7},
		{map[string]string{"idem.store.call": "acquire", "idem.outcome": idemotel.OutcomeFirstRun}, 3},
		{map[string]string{"idem.store.call": "acquire", "idem.outcome": idemotel.OutcomeReplay}, 1},
		{map[string]string{"idem.store.call": "acquire", "idem.outcome": idemotel.OutcomeConflict}, 1},
		{map[string]string{"idem.store.call": "acquire", "error.type": "store_unavailable"}, 1},
		{map[string]string{"idem.store.call": "complete", "error.type": "-"}, 2},
		{map[string]string{"idem.store.call": "release", "error.type": "-"}, 1},
	})
	tel.wantCounts(t, "idem.server.handler.duration", []countRow{
		{map[string]string{"idem.operation": "createPet"}, 3},
		{map[string]string{"http.response.status_code": "201"}, 2},
		{map[string]string{"http.response.status_code": "500"}, 1},
	})

	checkSpans(t, tel.spans.Ended())
}

// checkSpans: every store call is a span, the child of its request's span,
// with the fence of the lease it owns; no key reaches an attribute.
func checkSpans(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	requests := map[trace.SpanID]bool{}
	for _, s := range spans {
		if s.Name() == "POST /pets" {
			requests[s.SpanContext().SpanID()] = true
		}
	}
	names := map[string]int{}
	for _, s := range spans {
		attrs := attrMap(s.Attributes())
		for k, v := range attrs {
			for _, key := range []string{keyFirst, keyFail, keyHold, keyDown} {
				if strings.Contains(v, key) {
					t.Errorf("span %s attribute %s holds a key: %q", s.Name(), k, v)
				}
			}
		}
		if s.Name() == "POST /pets" {
			continue
		}
		names[s.Name()]++
		if !requests[s.Parent().SpanID()] {
			t.Errorf("span %s is not a child of a request span", s.Name())
		}
		switch {
		case s.Name() == "idem.acquire" && attrs["idem.outcome"] == idemotel.OutcomeFirstRun,
			s.Name() == "idem.complete", s.Name() == "idem.release":
			if attrs["idem.fence"] != "1" {
				t.Errorf("span %s: fence %q, want 1", s.Name(), attrs["idem.fence"])
			}
		case s.Name() == "idem.acquire" && attrs["error.type"] != "":
			if s.Status().Code != codes.Error {
				t.Errorf("failed acquire's span has status %v", s.Status())
			}
		}
		if s.Name() == "idem.complete" && attrs["http.response.status_code"] != "201" {
			t.Errorf("complete span: status %q", attrs["http.response.status_code"])
		}
	}
	if names["idem.acquire"] != 7 || names["idem.complete"] != 2 || names["idem.release"] != 1 || len(names) != 3 {
		t.Errorf("spans %v, want 7 idem.acquire, 2 idem.complete, 1 idem.release", names)
	}
}

// TestHooksDefaultProviders: without options NewHooks uses the global
// providers, no-op until the application installs an SDK.
func TestHooksDefaultProviders(t *testing.T) {
	hooks, err := idemotel.NewHooks()
	if err != nil || hooks.StoreCall == nil || hooks.FirstRun == nil {
		t.Fatalf("NewHooks() = %+v, %v", hooks, err)
	}
	ctx, end := hooks.StoreCall(context.Background(), idem.Event{Operation: "op", Call: "acquire"})
	if ctx == nil || end == nil {
		t.Fatal("StoreCall returned nil")
	}
	end(idem.Event{Operation: "op", Call: "acquire", Outcome: idemstore.OutcomeFirstRun, Fence: 1})
}

// TestServerStoreOutcomes: a store that refuses to run as configured counts
// as misconfigured, not as a store error, a result the engine could not
// store counts as unstored, and one no replica acknowledged as unreplicated.
func TestServerStoreOutcomes(t *testing.T) {
	tel := newTelemetry(t)
	hooks, err := idemotel.NewHooks(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	misconfigured := &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("%w: maxmemory-policy is allkeys-lru", idemstore.ErrStoreMisconfigured)}
	hooks.StoreError(ctx, idem.Event{Operation: "createPet", Err: misconfigured})
	hooks.StoreError(ctx, idem.Event{Operation: "createPet", Err: &idemstore.StoreError{Op: "acquire", Err: errors.New("dial tcp: connection refused")}})
	hooks.Unstored(ctx, idem.Event{Operation: "createPet", Status: 201, Response: &idem.Response{Status: 201}})
	hooks.Unreplicated(ctx, idem.Event{Operation: "createPet", Status: 201, Err: idemstore.ErrUnreplicated, Response: &idem.Response{Status: 201}})
	tel.wantCounts(t, "idem.server.outcomes", []countRow{
		{map[string]string{"idem.outcome": idemotel.OutcomeMisconfigured}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeStoreError}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeUnstored}, 1},
		{map[string]string{"idem.outcome": idemotel.OutcomeUnreplicated}, 1},
	})
}

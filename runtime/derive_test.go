package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

var derivedKeyForm = regexp.MustCompile(`^[0-9a-f]{32}$`)

// errAgain makes a Do run fail, releasing its lease, so that the next Do of
// the key runs again.
var errAgain = errors.New("run again")

// runTwice runs fn as a Do run of key twice (the first run fails after fn,
// so the second runs too) and returns what fn returned on each run.
func runTwice(t *testing.T, store idemstore.Store, key string, fn func(ctx context.Context) []string) (first, second []string) {
	t.Helper()
	op := &idemop.Operation{ID: "CreateOrder"}
	ctx := context.Background()
	_, _, err := idem.Do(ctx, store, op, key, nil, func(ctx context.Context) ([]byte, error) {
		first = fn(ctx)
		return nil, errAgain
	})
	if !errors.Is(err, errAgain) {
		t.Fatalf("first run: %v", err)
	}
	if _, _, err := idem.Do(ctx, store, op, key, nil, func(ctx context.Context) ([]byte, error) {
		second = fn(ctx)
		return []byte("ok"), nil
	}); err != nil {
		t.Fatalf("second run: %v", err)
	}
	return first, second
}

// TestDerivedKeyIsTheRunsAndTheNames: a named key is the same on every run
// of a request and different for another name or another request; it is 32
// hex digits; outside a run there is none.
func TestDerivedKeyIsTheRunsAndTheNames(t *testing.T) {
	store := memstore.New()
	names := func(ctx context.Context) []string {
		var keys []string
		for _, name := range []string{"ledger-entry", "email", "ledger-entry"} {
			k, err := idem.DerivedKey(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		return keys
	}
	first, second := runTwice(t, store, "order-1", names)
	other, _ := runTwice(t, store, "order-2", names)
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("re-run derived %v, first run %v", second, first)
	}
	if first[0] == first[1] || first[0] != first[2] {
		t.Errorf("names ledger-entry, email, ledger-entry derived %v: want one key per name", first)
	}
	if first[0] == other[0] || first[1] == other[1] {
		t.Errorf("two requests derived %v and %v", first, other)
	}
	for _, k := range first {
		if !derivedKeyForm.MatchString(k) || strings.Contains(k, "order") {
			t.Errorf("derived key %q: want 32 lower-case hex digits", k)
		}
	}
	if _, err := idem.DerivedKey(context.Background(), "x"); !errors.Is(err, idem.ErrNoRun) {
		t.Errorf("outside a run: %v, want ErrNoRun", err)
	}
}

// sentKeys makes calls of a Caller and records the key each sent.
type sentKeys struct {
	caller *idem.Caller
	mu     sync.Mutex
	keys   []string
}

// call makes one call of op with an attempt that answers 201 and records
// the key header it was sent with (or the body, for a body key).
func (s *sentKeys) call(t *testing.T, ctx context.Context, op *idemop.ClientOperation, opts ...idem.CallOption) string {
	t.Helper()
	c := s.caller.Begin(op, opts...)
	body, err := idemgen.MarshalBody(c, map[string]string{"amount": "5"})
	if err != nil {
		t.Fatal(err)
	}
	var sent string
	err = c.Run(ctx, func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://provider/charges", strings.NewReader(string(body)))
		if err := idemgen.Editor(c)(ctx, req); err != nil {
			return nil, err
		}
		sent = req.Header.Get("Idempotency-Key")
		if op.KeyPointer != "" {
			sent = string(body)
		}
		return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{}, Body: http.NoBody}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.keys = append(s.keys, sent)
	s.mu.Unlock()
	return sent
}

// TestCallKeyIsDerivedInARun: the calls of a run send keys derived from the
// run, the same on a re-run, one per call (two calls to one operation
// differ, as do calls to two operations); an explicit key wins; outside a
// run the key is random.
func TestCallKeyIsDerivedInARun(t *testing.T) {
	store := memstore.New()
	charge := &idemop.ClientOperation{ID: "CreateCharge"}
	refund := &idemop.ClientOperation{ID: "CreateRefund"}
	s := &sentKeys{caller: idem.NewCaller()}
	first, second := runTwice(t, store, "order-1", func(ctx context.Context) []string {
		return []string{s.call(t, ctx, charge), s.call(t, ctx, charge), s.call(t, ctx, refund), s.call(t, ctx, charge, idem.WithKey("mine"))}
	})
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("re-run sent %v, first run %v", second, first)
	}
	if first[0] == first[1] || first[0] == first[2] || first[1] == first[2] || first[3] != "mine" {
		t.Errorf("deposit, balance, refund, explicit sent %v: want three different derived keys and the explicit one", first)
	}
	for _, k := range first[:3] {
		if !derivedKeyForm.MatchString(k) {
			t.Errorf("derived key %q", k)
		}
	}
	ctx := context.Background()
	if a, b := s.call(t, ctx, charge), s.call(t, ctx, charge); a == b || a == first[0] {
		t.Errorf("outside a run sent %q and %q: want fresh random keys", a, b)
	}
}

// TestCallBodyKeyIsDerivedInARun: a body-key operation's key is filled in
// the body by MarshalBody and replaced there by the derived key at Run.
func TestCallBodyKeyIsDerivedInARun(t *testing.T) {
	store := memstore.New()
	op := &idemop.ClientOperation{ID: "CreatePayment", KeyPointer: "/idempotency_key"}
	s := &sentKeys{caller: idem.NewCaller()}
	first, second := runTwice(t, store, "order-1", func(ctx context.Context) []string {
		return []string{s.call(t, ctx, op), s.call(t, ctx, op)}
	})
	if fmt.Sprint(first) != fmt.Sprint(second) || first[0] == first[1] {
		t.Errorf("bodies of two calls on two runs: %v then %v; want two bodies, the same on both runs", first, second)
	}
	if !regexp.MustCompile(`"idempotency_key":"[0-9a-f]{32}"`).MatchString(first[0]) {
		t.Errorf("body %s", first[0])
	}
}

// TestCallKeysOfConcurrentCalls: calls that one run makes at once get
// distinct keys, those of ordinals 0..n-1 (in whichever order they came):
// the set a re-run's sequential calls send.
func TestCallKeysOfConcurrentCalls(t *testing.T) {
	store := memstore.New()
	op := &idemop.ClientOperation{ID: "CreateCharge"}
	const n = 16
	s := &sentKeys{caller: idem.NewCaller()}
	concurrent, sequential := runTwice(t, store, "order-1", func(ctx context.Context) []string {
		if s.keys != nil { // the second run: one after another
			var keys []string
			for range n {
				keys = append(keys, s.call(t, ctx, op))
			}
			return keys
		}
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { s.call(t, ctx, op) })
		}
		wg.Wait()
		return append([]string(nil), s.keys...)
	})
	sort.Strings(concurrent)
	sort.Strings(sequential)
	if fmt.Sprint(concurrent) != fmt.Sprint(sequential) {
		t.Errorf("concurrent calls sent %v, sequential %v: want the same set", concurrent, sequential)
	}
	for i := 1; i < n; i++ {
		if concurrent[i] == concurrent[i-1] {
			t.Errorf("two concurrent calls sent %s", concurrent[i])
		}
	}
}

// TestCallFormKeyIsDerivedInARun: a form body's key field, filled by
// MarshalForm, carries the derived key.
func TestCallFormKeyIsDerivedInARun(t *testing.T) {
	store := memstore.New()
	op := &idemop.ClientOperation{ID: "CreateCharge", KeyPointer: "/idempotency_key"}
	type chargeForm struct {
		Amount int    `form:"amount"`
		Key    string `form:"idempotency_key,omitempty"`
	}
	send := func(ctx context.Context) []string {
		c := idem.NewCaller().Begin(op)
		body, err := idemgen.MarshalForm(c, chargeForm{Amount: 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Run(ctx, func(context.Context) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{}, Body: http.NoBody}, nil
		}); err != nil {
			t.Fatal(err)
		}
		return []string{string(body), c.Key()}
	}
	first, second := runTwice(t, store, "order-1", send)
	if fmt.Sprint(first) != fmt.Sprint(second) || first[0] != "amount=5&idempotency_key="+first[1] || !derivedKeyForm.MatchString(first[1]) {
		t.Errorf("form and key %q on the first run, %q on the second", first, second)
	}
}

// TestDerivedKeysFollowThePayload: the keys a run
// derives (named, of a client call, within a step) are its request's: a
// retry of the same request under key K derives the same keys and finds
// the step journal; another payload under K, released by the failed run,
// is another request, which derives other keys and finds no journal,
// as the store keeps the journal for the record's fingerprint. Before,
// the keys were K's alone, so a provider replayed the released request's
// call (or answered 422) for the new one.
func TestDerivedKeysFollowThePayload(t *testing.T) {
	store := memstore.New()
	op := &idemop.Operation{ID: "CreateOrder"}
	charge := &idemop.ClientOperation{ID: "CreateCharge"}
	s := &sentKeys{caller: idem.NewCaller()}
	var stepRuns int
	run := func(payload string) []string {
		var keys []string
		_, _, err := idem.Do(context.Background(), store, op, "order-K", []byte(payload), func(ctx context.Context) ([]byte, error) {
			named, err := idem.DerivedKey(ctx, "ledger-entry")
			if err != nil {
				return nil, err
			}
			inStep, err := idem.Step(ctx, "charge", func(ctx context.Context) (string, error) {
				stepRuns++
				return s.call(t, ctx, charge), nil
			})
			if err != nil {
				return nil, err
			}
			keys = []string{named, inStep, s.call(t, ctx, charge)}
			return nil, errAgain // released: the next Do of K runs again
		})
		if !errors.Is(err, errAgain) {
			t.Fatalf("run of %s: %v", payload, err)
		}
		return keys
	}
	first := run(`{"amount":10}`)
	retry := run(`{"amount":10}`)
	other := run(`{"amount":20}`)
	if fmt.Sprint(first) != fmt.Sprint(retry) {
		t.Errorf("a retry of the same request derived %v, the first run %v", retry, first)
	}
	for i, what := range []string{"named key", "key of the step's call", "key of the handler's call"} {
		if other[i] == first[i] {
			t.Errorf("%s: another payload under the released key derived the first request's %s", what, first[i])
		}
	}
	if stepRuns != 2 {
		t.Errorf("step ran %d times, want twice: once per request (the retry read the journal, the other payload did not see it)", stepRuns)
	}
}

package e2e_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/oapi-codegen/runtime"

	"github.com/idemgen/idemgen/internal/e2e/formapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// formServer is a form-body API (Stripe style) that checks every request
// as the vendor would: a form content type, a body that parses, the key
// (header or field). It answers 503 to the first failFirst attempts.
type formServer struct {
	mu        sync.Mutex
	failFirst int
	bodies    []string // raw bodies, in arrival order
	keys      []string // the Idempotency-Key header of each
}

func (s *formServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(raw))
	if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || err != nil {
		http.Error(w, "not a form", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, string(raw))
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	fail := len(s.bodies) <= s.failFirst
	s.mu.Unlock()
	switch {
	case fail:
		w.WriteHeader(http.StatusServiceUnavailable)
	case r.URL.Path == "/v1/refunds" && form.Get("idempotency_key") == "":
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"status":400,"code":"missing-key","detail":"idempotency_key is required"}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"obj_1"}`)
	}
}

func newFormClient(t *testing.T, s *formServer) *formapi.IdempotentClient {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c, err := formapi.NewClientWithResponses(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	return formapi.NewIdempotentClient(c)
}

// TestFormClient: the typed form variant encodes the body once with
// oapi-codegen's form encoder (nested metadata included) and sends the same
// bytes and key on every attempt; a body key that is a form field is filled
// when empty and adopted when set.
func TestFormClient(t *testing.T) {
	ctx := context.Background()
	email, name := "ada@example.com", "Ada"

	s := &formServer{failFirst: 2}
	c := newFormClient(t, s)
	var res idem.CallResult
	resp, err := c.PostCustomersWithFormdataBody(ctx, formapi.PostCustomersFormdataRequestBody{
		Email: &email, Name: &name, Metadata: &map[string]string{"order": "42"},
	}, idem.WithResult(&res))
	if err != nil || resp.StatusCode() != http.StatusOK || resp.JSON200 == nil || resp.JSON200.Id != "obj_1" {
		t.Fatalf("PostCustomersWithFormdataBody: %v, %v", err, resp)
	}
	if len(s.bodies) != 3 || res.Attempts != 3 {
		t.Fatalf("%d requests, %d attempts; want 3 (two 503s retried)", len(s.bodies), res.Attempts)
	}
	form, _ := url.ParseQuery(s.bodies[0])
	if form.Get("email") != email || form.Get("metadata[order]") != "42" {
		t.Errorf("body %q: want email and metadata[order]=42", s.bodies[0])
	}
	for i := range s.bodies {
		if s.bodies[i] != s.bodies[0] || s.keys[i] != res.Key || res.Key == "" {
			t.Errorf("attempt %d sent %q with key %q; want %q with %q on every attempt", i+1, s.bodies[i], s.keys[i], s.bodies[0], res.Key)
		}
	}

	// A body key that is a form field: filled when empty...
	s = &formServer{failFirst: 1}
	c = newFormClient(t, s)
	resp2, err := c.PostRefundsWithFormdataBody(ctx, formapi.PostRefundsFormdataRequestBody{Charge: "ch_1"}, idem.WithResult(&res))
	if err != nil || resp2.StatusCode() != http.StatusOK {
		t.Fatalf("PostRefundsWithFormdataBody: %v, %v", err, resp2)
	}
	for i, b := range s.bodies {
		if f, _ := url.ParseQuery(b); f.Get("idempotency_key") != res.Key || b != s.bodies[0] || s.keys[i] != "" {
			t.Errorf("attempt %d sent %q, header key %q; want the call's key %q in the field alone, the same bytes each time", i+1, b, s.keys[i], res.Key)
		}
	}
	// ... adopted when set, refused when it differs from WithKey's.
	own := "refund-ch_1-attempt-1"
	if _, err := c.PostRefundsWithFormdataBody(ctx, formapi.PostRefundsFormdataRequestBody{Charge: "ch_1", IdempotencyKey: &own}, idem.WithResult(&res)); err != nil || res.Key != own {
		t.Errorf("own key: %v, call key %q; want %q", err, res.Key, own)
	}
	if _, err := c.PostRefundsWithFormdataBody(ctx, formapi.PostRefundsFormdataRequestBody{Charge: "ch_1", IdempotencyKey: &own}, idem.WithKey("another")); !errors.Is(err, idem.ErrBodyKeyDiffers) {
		t.Errorf("form key differing from WithKey: err = %v, want ErrBodyKeyDiffers", err)
	}

	// The raw variant sends the caller's bytes as they are: without the
	// field, the API's 400 problem comes back once, not retried.
	s = &formServer{}
	c = newFormClient(t, s)
	_, err = c.PostRefunds(ctx, "application/x-www-form-urlencoded", strings.NewReader("charge=ch_1"), idem.WithResult(&res))
	var pe *idem.ProblemError
	if !errors.As(err, &pe) || pe.Problem.Code != "missing-key" || res.Attempts != 1 || len(s.bodies) != 1 {
		t.Errorf("raw variant without the key field: err = %v, %d attempts; want one 400 problem", err, res.Attempts)
	}
}

// TestFormEncodingAgreesWithOapiCodegen: where oapi-codegen's own form
// encoder (runtime.MarshalForm, which its client's XWithFormdataBody uses)
// handles a body, the typed variant sends the very same bytes; it departs
// only for maps, which that encoder writes as Go syntax.
func TestFormEncodingAgreesWithOapiCodegen(t *testing.T) {
	type address struct {
		Line1 string  `json:"line1"`
		City  *string `json:"city,omitempty"`
	}
	type nested struct {
		Name    string    `form:"name" json:"name"`
		Tags    []string  `json:"tags,omitempty"`
		Address *address  `json:"address,omitempty"`
		Items   []address `json:"items,omitempty"`
		Count   int       `json:"count"`
		Skipped string    `json:"-"`
	}
	email, city, balance := "ada@example.com", "Paris", 0
	for _, body := range []any{
		formapi.PostCustomersFormdataRequestBody{Email: &email, Balance: &balance},
		formapi.PostCustomersFormdataRequestBody{},
		&formapi.PostRefundsFormdataRequestBody{Charge: "ch_1"},
		nested{Name: "a b&c", Tags: []string{"x", "y"}, Address: &address{Line1: "1 Rue", City: &city}, Items: []address{{Line1: "i0"}}, Skipped: "no"},
	} {
		want, err := runtime.MarshalForm(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := idemgen.MarshalForm(idem.NewCaller().Begin(&idemop.ClientOperation{ID: "Op"}), body)
		if err != nil || string(got) != want.Encode() {
			t.Errorf("%T: MarshalForm = %q, %v; runtime.MarshalForm = %q", body, got, err, want.Encode())
		}
	}
	got, _ := idemgen.MarshalForm(idem.NewCaller().Begin(&idemop.ClientOperation{ID: "Op"}), formapi.PostCustomersFormdataRequestBody{Metadata: &map[string]string{"order": "42", "a": "b"}})
	if string(got) != "metadata%5Ba%5D=b&metadata%5Border%5D=42" {
		t.Errorf("map: %q, want metadata[a]=b&metadata[order]=42", got)
	}
}

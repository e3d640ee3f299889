package publishedclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	publishedclient "github.com/idemgen/idemgen/examples/petstore/api/published"
	"github.com/idemgen/idemgen/examples/petstore/server"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// The published overlay gives every x-idempotent operation typed problem
// responses for 409 and 422, and the key header as a parameter (required
// where the spec did not declare it). These declarations do not compile
// against a client generated without the overlay.
var (
	_ *publishedclient.IdempotencyProblem = publishedclient.CreatePetResponse{}.ApplicationproblemJSON409
	_ *publishedclient.IdempotencyProblem = publishedclient.CreatePetResponse{}.ApplicationproblemJSON422
	_ *publishedclient.IdempotencyProblem = publishedclient.AdoptPetResponse{}.ApplicationproblemJSON409
	_ *publishedclient.IdempotencyProblem = publishedclient.AdoptPetResponse{}.ApplicationproblemJSON422
	_ *publishedclient.IdempotencyProblem = publishedclient.CreatePaymentResponse{}.ApplicationproblemJSON409
	_ *publishedclient.IdempotencyProblem = publishedclient.CreatePaymentResponse{}.ApplicationproblemJSON422
	_ *int                                = publishedclient.CreatePetResponse409Headers{}.RetryAfter
	_ *string                             = publishedclient.CreatePetResponse201Headers{}.IdempotentReplayed
	_ string                              = publishedclient.AdoptPetParams{}.IdempotencyKey
)

// TestTypedProblems runs the petstore's strict server (idemgen's middleware
// over miniredis) and checks that the client generated from the published
// overlay decodes its 409 and 422 into the typed fields, code member
// included, and sees a replay in the typed Idempotent-Replayed header.
func TestTypedProblems(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })

	// The first createPet is held in the handler until release is closed,
	// so that a duplicate meets it in flight.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := shop.New()
	s.Gate = func(_ context.Context, op string) {
		if op == "createPet" {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
	}
	ts := httptest.NewServer(server.NewStrictHandler(s, redisstore.New(rdb), server.ScopedByAPIKey([]byte("published test scope secret"))...))
	t.Cleanup(ts.Close)
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before ts.Close, which waits for the held request
	c, err := publishedclient.NewClientWithResponses(ts.URL, publishedclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set(server.APIKeyHeader, "sk_published_test") // the spec's apiKey scheme
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}

	key := "published-test-0001"
	params := &publishedclient.CreatePetParams{IdempotencyKey: &key}
	body := publishedclient.NewPet{Name: "Rex", Species: "dog"}

	type result struct {
		resp *publishedclient.CreatePetResponse
		err  error
	}
	first := make(chan result, 1)
	go func() {
		resp, err := c.CreatePetWithResponse(ctx, params, body)
		first <- result{resp, err}
	}()
	select {
	case <-entered:
	case r := <-first:
		t.Fatalf("the first request did not reach the handler: %v, %+v", r.err, r.resp)
	}

	// 409: the same key while the original runs.
	dup, err := c.CreatePetWithResponse(ctx, params, body)
	if err != nil {
		t.Fatal(err)
	}
	unblock()
	if dup.StatusCode() != http.StatusConflict || dup.ApplicationproblemJSON409 == nil {
		t.Fatalf("duplicate in flight: status %d, ApplicationproblemJSON409 %v, body %s", dup.StatusCode(), dup.ApplicationproblemJSON409, dup.Body)
	}
	p := dup.ApplicationproblemJSON409
	if p.Code != publishedclient.IdempotencyProblemCodeConflict || p.Status != http.StatusConflict || p.Type == "" || p.Title == "" || p.Detail == "" {
		t.Errorf("409 problem: %+v", *p)
	}
	if h := dup.Headers409; h == nil || h.RetryAfter == nil || *h.RetryAfter < 1 {
		t.Errorf("409 Retry-After not decoded: %+v", h)
	}

	orig := <-first
	if orig.err != nil {
		t.Fatal(orig.err)
	}
	if orig.resp.StatusCode() != http.StatusCreated || orig.resp.JSON201 == nil {
		t.Fatalf("original: status %d, body %s", orig.resp.StatusCode(), orig.resp.Body)
	}

	// The replay: the stored 201, marked in the typed header.
	replay, err := c.CreatePetWithResponse(ctx, params, body)
	if err != nil {
		t.Fatal(err)
	}
	if replay.StatusCode() != http.StatusCreated || replay.JSON201 == nil || replay.JSON201.Id != orig.resp.JSON201.Id {
		t.Fatalf("replay: status %d, body %s", replay.StatusCode(), replay.Body)
	}
	if h := replay.Headers201; h == nil || h.IdempotentReplayed == nil || *h.IdempotentReplayed != "true" {
		t.Errorf("replay: Idempotent-Replayed not decoded: %+v", h)
	}

	// 422: the same key with another body.
	other, err := c.CreatePetWithResponse(ctx, params, publishedclient.NewPet{Name: "Rex", Species: "cat"})
	if err != nil {
		t.Fatal(err)
	}
	if other.StatusCode() != http.StatusUnprocessableEntity || other.ApplicationproblemJSON422 == nil {
		t.Fatalf("key reused: status %d, ApplicationproblemJSON422 %v, body %s", other.StatusCode(), other.ApplicationproblemJSON422, other.Body)
	}
	p = other.ApplicationproblemJSON422
	if p.Code != publishedclient.IdempotencyProblemCodeFingerprintMismatch || p.Status != http.StatusUnprocessableEntity || p.Detail == "" {
		t.Errorf("422 problem: %+v", *p)
	}

	if n := s.Runs("createPet"); n != 1 {
		t.Errorf("createPet ran %d times, want 1", n)
	}
}

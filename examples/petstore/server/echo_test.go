package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/examples/petstore/server"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"
)

// TestEchoWiring: the echo server of the petstore, wired as docs/server.md shows,
// runs createPet once per key and replays it, and stores an error its
// handler returned (410 for a pet adopted by someone else) as echo renders
// it, so that its replay is the same answer.
func TestEchoWiring(t *testing.T) {
	_, rdb := embedredis.StartTB(t)
	s := shop.New()
	h := server.NewEchoHandler(s, redisstore.New(rdb), server.ScopedByAPIKey([]byte("petstore echo test secret, 32 b"))...)
	send := func(path, key, body string) *http.Response {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set(server.APIKeyHeader, "key-1")
		req.Header.Set("X-Account-Id", "acct-1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	for i, want := range []string{"", "true"} {
		res := send("/pets", "pet-1", `{"name":"Rex","species":"dog"}`)
		if res.StatusCode != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != want {
			t.Fatalf("createPet #%d: %d, replayed %q; want 201, replayed %q", i+1, res.StatusCode, res.Header.Get("Idempotent-Replayed"), want)
		}
	}
	if n := s.Runs("createPet"); n != 1 {
		t.Errorf("createPet ran %d times, want 1", n)
	}
	if res := send("/pets/1/adoptions", "adopt-1", `{"adopter":"ann"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("adoptPet: %d, want 201", res.StatusCode)
	}
	for i, want := range []string{"", "true"} {
		res := send("/pets/1/adoptions", "adopt-2", `{"adopter":"bob"}`)
		if res.StatusCode != http.StatusGone || res.Header.Get("Idempotent-Replayed") != want {
			t.Fatalf("adoptPet by bob #%d: %d, replayed %q; want 410, replayed %q", i+1, res.StatusCode, res.Header.Get("Idempotent-Replayed"), want)
		}
	}
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestPlaceRetriesWithOneKey: a 503 is retried with the same key and body,
// and the order placed on the second attempt is returned.
func TestPlaceRetriesWithOneKey(t *testing.T) {
	var mu sync.Mutex
	var keys, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		bodies = append(bodies, string(b))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id": 7, "item": "book"}`)
	}))
	defer srv.Close()

	order, res, err := place(context.Background(), srv.URL, "book")
	if err != nil {
		t.Fatal(err)
	}
	if order.Id != 7 || res.Attempts != 2 {
		t.Errorf("order %+v after %d attempts, want order 7 after 2", order, res.Attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] || bodies[0] != bodies[1] || keys[0] != res.Key {
		t.Errorf("attempts sent keys %q and bodies %q; want one key (%q) and one body", keys, bodies, res.Key)
	}
}

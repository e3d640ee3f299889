package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTruncatedRecordIsNotReplayed: a completed record that lost its tail in
// Redis (by 1 or 5 bytes, to 20 bytes: the tag, the fingerprint, the status
// and the meta byte) is never replayed as if whole. The retry is answered
// 503 with a problem, a line is logged, and the handler does not run again.
// On real Redis.
func TestTruncatedRecordIsNotReplayed(t *testing.T) {
	rdb := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cut  func(v string) string
	}{
		{"by 1 byte", func(v string) string { return v[:len(v)-1] }},
		{"by 5 bytes", func(v string) string { return v[:len(v)-5] }},
		{"to 20 bytes", func(v string) string { return v[:20] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			var logs syncBuffer
			store := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
			e := idem.NewEngine(store, idem.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			op := idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders"}
			var runs atomic.Int32
			handler := func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"order":"o-1","amount":4200}`))
			}
			serve := func() *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				e.Serve(w, engineReq(http.MethodPost, "/orders", `{"amount":4200}`, "Idempotency-Key", "k-1"), &op, handler)
				return w
			}
			if w := serve(); w.Code != http.StatusCreated {
				t.Fatalf("first request: %d %s", w.Code, w.Body)
			}
			key := prefix + ":" + idemstore.RecordKeyIn(op.API, op.ID, "", "k-1")
			v, err := rdb.Get(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, key, tc.cut(v), 0).Err(); err != nil {
				t.Fatal(err)
			}
			w := serve()
			var p struct{ Code string }
			_ = json.Unmarshal(w.Body.Bytes(), &p)
			if w.Code != http.StatusServiceUnavailable || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") || p.Code != "store-unavailable" {
				t.Errorf("retry of a truncated record: %d %v %q; want 503 store-unavailable", w.Code, w.Header(), w.Body)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("handler ran %d times, want once", n)
			}
			if !strings.Contains(logs.String(), "acquire failed") {
				t.Errorf("nothing logged about the record: %q", logs.String())
			}
		})
	}
}

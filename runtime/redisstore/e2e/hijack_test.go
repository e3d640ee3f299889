package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestHijackedConnectionNotStored: a handler that takes the connection
// over answers its client itself; the layer never sees that answer, so it
// must not store one (an empty 200 would be replayed to every retry). The
// lease is released, a retry runs the handler again, and the log says why.
func TestHijackedConnectionNotStored(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		var logs bytes.Buffer
		settled := make(chan idem.Event, 2) // the lease was completed or released
		hooks := idem.Hooks{
			Completed: func(_ context.Context, ev idem.Event) { settled <- ev },
			Released:  func(_ context.Context, ev idem.Event) { settled <- ev },
		}
		h := newHarnessOn(t, store, idemop.Operation{}, func(h *harness, w http.ResponseWriter, r *http.Request) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack through the recorder: %v", err)
				return
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 201 Created\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			buf.Flush()
		}, idem.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), idem.WithHooks(hooks))
		ts := httptest.NewServer(h.h)
		t.Cleanup(ts.Close)
		send := func() (int, string, string) {
			req, _ := http.NewRequest("POST", ts.URL+"/pets", strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", "k")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(bufio.NewReader(resp.Body))
			return resp.StatusCode, string(body), resp.Header.Get(idemop.HeaderReplayed)
		}
		for i := range 2 {
			if status, body, replayed := send(); status != http.StatusCreated || body != "hijacked" || replayed != "" {
				t.Fatalf("request %d: %d %q replayed %q, want the handler's own 201", i+1, status, body, replayed)
			}
			// The client has its answer before the engine settles the
			// lease: wait for that before the retry.
			if ev := <-settled; ev.Err == nil || ev.Status != 0 {
				t.Fatalf("request %d: the lease was settled as %+v, want released", i+1, ev)
			}
		}
		h.wantRuns(2)
		if !strings.Contains(logs.String(), "hijacked") {
			t.Errorf("the log does not say why nothing was stored: %s", logs.String())
		}
	})
}

// TestHijackedStrictResponseNotStored: a strict response object whose
// Visit method hijacks the connection is not stored either: the strict
// wrapper gets an error, the lease is released, and a retry runs again.
func TestHijackedStrictResponseNotStored(t *testing.T) {
	forEachRedis(t, func(t *testing.T, store idemstore.Store) {
		settled := make(chan idem.Event, 2) // the lease was completed or released
		e := idem.NewEngine(store, idem.WithHooks(idem.Hooks{
			Completed: func(_ context.Context, ev idem.Event) { settled <- ev },
			Released:  func(_ context.Context, ev idem.Event) { settled <- ev },
		}))
		op := &idemop.Operation{ID: "CreatePet"}
		var runs atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			idemgen.ServeBody(e, w, r, op, func(w http.ResponseWriter, r *http.Request) {
				_, err := e.ServeStrict(r.Context(), r, op, func(ctx context.Context) (*idem.Response, error) {
					runs.Add(1)
					return idemgen.CaptureContext(ctx, func(w http.ResponseWriter) error {
						conn, buf, err := http.NewResponseController(w).Hijack()
						if err != nil {
							return err
						}
						defer conn.Close()
						buf.WriteString("HTTP/1.1 201 Created\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
						return buf.Flush()
					})
				})
				if err == nil {
					t.Error("ServeStrict returned no error for a hijacked response")
				}
			})
		})
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		for i := range 2 {
			req, _ := http.NewRequest("POST", ts.URL+"/pets", strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || string(body) != "hijacked" {
				t.Fatalf("request %d: %d %q", i+1, resp.StatusCode, body)
			}
			if ev := <-settled; ev.Err == nil || ev.Status != 0 {
				t.Fatalf("request %d: the lease was settled as %+v, want released", i+1, ev)
			}
		}
		if n := runs.Load(); n != 2 {
			t.Fatalf("ran %d times, want 2", n)
		}
	})
}

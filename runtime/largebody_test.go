package idem_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// countingWriter is a client's writer that keeps what it was sent but the
// body, which it only counts.
type countingWriter struct {
	header http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

// bigResponse writes size bytes in chunks to w after a 201 with a
// Content-Type, and reports the most the recorder ever buffered and how much
// the client had got before the last chunk.
func bigResponse(w http.ResponseWriter, client *countingWriter, size int) (maxBuffered, sentBeforeLast int) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusCreated)
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for written := 0; written < size; written += len(chunk) {
		if written+len(chunk) >= size {
			sentBeforeLast = client.n
		}
		w.Write(chunk)
		maxBuffered = max(maxBuffered, idem.Buffered(w))
	}
	return maxBuffered, sentBeforeLast
}

// TestLargeResponseStreamed: a response larger than the stored-body limit
// reaches its client whole, but the recorder never holds more than the
// limit: past it, the rest streams to the client. The record keeps status
// and headers, and the replay says the body was omitted. Plain and strict
// servers alike, on real Redis.
func TestLargeResponseStreamed(t *testing.T) {
	const limit, size = 64 << 10, 8 << 20
	var runs atomic.Int64
	var maxBuffered, sentBeforeLast int
	styles := map[string]func(e *idem.Engine, client *countingWriter, r *http.Request){
		"plain": func(e *idem.Engine, client *countingWriter, r *http.Request) {
			e.Serve(client, r, &idemop.Operation{ID: "CreatePet"}, func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				maxBuffered, sentBeforeLast = bigResponse(w, client, size)
			})
		},
		"strict": func(e *idem.Engine, client *countingWriter, r *http.Request) {
			op := &idemop.Operation{ID: "CreatePet"}
			idemgen.ServeBody(e, client, r, op, func(w http.ResponseWriter, r *http.Request) {
				resp, err := e.ServeStrict(r.Context(), r, op, func(ctx context.Context) (*idem.Response, error) {
					runs.Add(1)
					return idemgen.CaptureContext(ctx, func(w http.ResponseWriter) error {
						maxBuffered, sentBeforeLast = bigResponse(w, client, size)
						return nil
					})
				})
				if err != nil {
					t.Fatal(err)
				}
				resp.Write(w) // as the generated XIdempotentResponse does
			})
		},
	}
	for name, serve := range styles {
		t.Run(name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, store idemstore.Store) {
				runs.Store(0)
				e := idem.NewEngine(store, idem.WithStoredBodyLimit(limit))
				client := &countingWriter{header: http.Header{}}
				serve(e, client, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k"))
				if client.status != http.StatusCreated || client.n != size || client.header.Get("Content-Type") != "application/octet-stream" {
					t.Fatalf("client got %d, %d bytes, %v; want 201 and %d bytes", client.status, client.n, client.header, size)
				}
				if maxBuffered > limit {
					t.Errorf("the recorder buffered up to %d bytes, over the %d-byte limit", maxBuffered, limit)
				}
				if sentBeforeLast < size/2 {
					t.Errorf("the client had %d bytes before the handler's last write: not streamed", sentBeforeLast)
				}
				replay := &countingWriter{header: http.Header{}}
				serve(e, replay, engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k"))
				if replay.status != http.StatusCreated || replay.n != 0 || replay.header.Get(idemop.HeaderBodyOmitted) != "true" ||
					replay.header.Get("Content-Type") != "application/octet-stream" {
					t.Fatalf("replay = %d, %d bytes, %v", replay.status, replay.n, replay.header)
				}
				if runs.Load() != 1 {
					t.Fatalf("handler ran %d times, want 1", runs.Load())
				}
			})
		})
	}
}

// TestStrictFailureAfterStreaming: a strict handler that fails after its
// response went past the stored-body limit to the client gets no 500
// written into that response (ServeStrict answers the streamed response,
// which writes nothing more), and its key is released: the retry runs.
func TestStrictFailureAfterStreaming(t *testing.T) {
	const limit, size = 64 << 10, 256 << 10
	forEachStore(t, func(t *testing.T, store idemstore.Store) {
		e := idem.NewEngine(store, idem.WithStoredBodyLimit(limit))
		op := &idemop.Operation{ID: "CreatePet"}
		var runs atomic.Int64
		serve := func(fail bool) *countingWriter {
			client := &countingWriter{header: http.Header{}}
			r := engineReq("POST", "/pets", `{}`, "Idempotency-Key", "k")
			idemgen.ServeBody(e, client, r, op, func(w http.ResponseWriter, r *http.Request) {
				resp, err := e.ServeStrict(r.Context(), r, op, func(ctx context.Context) (*idem.Response, error) {
					runs.Add(1)
					return idemgen.CaptureContext(ctx, func(w http.ResponseWriter) error {
						bigResponse(w, client, size)
						if fail {
							return errors.New("the database went away after the response began")
						}
						return nil
					})
				})
				if err != nil { // as oapi-codegen's default ResponseErrorHandlerFunc
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				_ = resp.Write(w) // as the generated XIdempotentResponse does
			})
			return client
		}
		if c := serve(true); c.status != http.StatusCreated || c.n != size {
			t.Errorf("failed after streaming: the client got %d and %d bytes; want the 201 and exactly the %d bytes streamed", c.status, c.n, size)
		}
		if c := serve(false); c.status != http.StatusCreated || c.n != size || c.header.Get(idemop.HeaderReplayed) != "" || runs.Load() != 2 {
			t.Errorf("retry: %d, %d bytes, %v, %d runs; want a second run", c.status, c.n, c.header, runs.Load())
		}
	})
}

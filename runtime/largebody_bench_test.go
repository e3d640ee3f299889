package idem_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// discardWriter is a client's writer that drops what it is sent.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkLargeResponse: a 4 MiB response in 32 KiB writes under the
// default 1 MiB stored-body limit, one new key per iteration (memStore).
// B/op is what a request holds: the whole body when it is buffered, at
// most the limit when the rest streams.
func BenchmarkLargeResponse(b *testing.B) {
	e := idem.NewEngine(newMemStore())
	op := &idemop.Operation{ID: "Export"}
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	handler := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for range (4 << 20) / len(chunk) {
			w.Write(chunk)
		}
	}
	client := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := engineReq("POST", "/exports", `{}`, "Idempotency-Key", "k"+strconv.Itoa(i))
		e.Serve(client, r, op, handler)
		clear(client.header)
	}
}

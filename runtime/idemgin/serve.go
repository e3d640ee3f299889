package idemgin

import (
	"bufio"
	"errors"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Serve runs h under e's idempotency protocol for op, as the generated gin
// ServerInterface decorator does: it is [idem.Engine.Serve] with c.Writer
// swapped for a writer over the engine's recorder while h runs, and
// c.Request replaced by the engine's (its body restored, its context
// carrying the key and fence: read them with
// idem.FromContext(c.Request.Context()), or from c itself, whatever the gin
// engine's ContextWithFallback: see [ServeStrict]). When the engine answers instead
// of h (a replay, 400, 409, 413, 422, 503), it writes to c's own writer.
// A panic in h releases the key and goes on to gin's Recovery with c's own
// writer restored, still unwritten.
func Serve(e *idem.Engine, c *gin.Context, op *idemop.Operation, h func(c *gin.Context)) {
	res, req := c.Writer, c.Request
	defer func() { c.Writer, c.Request = res, req; c.Delete(idemstore.RunContextKey) }()
	e.Serve(res, req, op, func(w http.ResponseWriter, r *http.Request) {
		c.Request = r
		c.Set(idemstore.RunContextKey, r.Context())
		if w == http.ResponseWriter(res) {
			// No key and none required, or fail-open: h answers the client.
			h(c)
			return
		}
		cw := &writer{ResponseWriter: w, under: res, size: noWritten, status: http.StatusOK}
		c.Writer = cw
		h(c)
		if cw.statusSet {
			// gin sends a status set without a body only when the
			// request ends (WriteHeaderNow): send it to the recorder now.
			cw.WriteHeaderNow()
		}
	})
}

// noWritten is writer.size before the status line is sent, as in gin.
const noWritten = -1

// writer is a gin.ResponseWriter over the engine's recorder, with gin's
// semantics: WriteHeader records the status, which is sent with the first
// write or WriteHeaderNow.
type writer struct {
	http.ResponseWriter                    // the engine's recorder
	under               gin.ResponseWriter // c's own writer, for CloseNotify
	size                int
	status              int
	statusSet           bool // WriteHeader was called
}

var _ gin.ResponseWriter = (*writer)(nil)

// WriteHeader implements http.ResponseWriter the way gin's writer does: it
// records code, to be sent with the first write.
func (w *writer) WriteHeader(code int) {
	if code > 0 && !w.Written() {
		w.status, w.statusSet = code, true
	}
}

// WriteHeaderNow implements gin.ResponseWriter.
func (w *writer) WriteHeaderNow() {
	if !w.Written() {
		w.size = 0
		w.ResponseWriter.WriteHeader(w.status)
	}
}

// Write implements http.ResponseWriter.
func (w *writer) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

// WriteString implements gin.ResponseWriter.
func (w *writer) WriteString(s string) (int, error) {
	w.WriteHeaderNow()
	n, err := w.ResponseWriter.Write([]byte(s))
	w.size += n
	return n, err
}

// Status implements gin.ResponseWriter.
func (w *writer) Status() int { return w.status }

// Size implements gin.ResponseWriter.
func (w *writer) Size() int { return w.size }

// Written implements gin.ResponseWriter.
func (w *writer) Written() bool { return w.size != noWritten }

// Flush implements http.Flusher as a no-op: the response is buffered until
// it is stored.
func (w *writer) Flush() {}

// errHijack is Hijack's error: a protected response is buffered until it is
// stored, so the connection cannot be taken over.
var errHijack = errors.New("idemgin: a response under an idempotency key cannot hijack the connection")

// Hijack implements http.Hijacker; it always fails.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) { return nil, nil, errHijack }

// CloseNotify implements http.CloseNotifier through c's own writer.
func (w *writer) CloseNotify() <-chan bool { return w.under.CloseNotify() }

// Pusher implements gin.ResponseWriter: no server push from a buffered
// response.
func (w *writer) Pusher() http.Pusher { return nil }

// Unwrap returns the engine's recorder, for http.ResponseController.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

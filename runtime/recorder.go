package idem

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
)

// recorder is the buffering http.ResponseWriter a protected handler writes
// to: nothing reaches the client until the result is stored. Flush is a
// no-op (there is nothing to flush yet); Unwrap exposes the underlying
// writer to http.ResponseController for deadlines and the like. Hijack
// hands the connection over and marks the recorder: what the handler then
// answers never passes through it, so there is nothing to store.
type recorder struct {
	under    http.ResponseWriter // the client's writer; nil under Capture
	header   http.Header         // the handler's working header map
	sent     http.Header         // header snapshot taken at WriteHeader
	status   int                 // 0 until the handler answers
	hijacked bool                // the handler took the connection over
	body     bytes.Buffer
	resp     Response // what response returns, kept here to save an allocation
}

func newRecorder(under http.ResponseWriter) *recorder {
	return &recorder{under: under, header: http.Header{}}
}

// Header implements http.ResponseWriter.
func (rec *recorder) Header() http.Header { return rec.header }

// WriteHeader implements http.ResponseWriter. As with net/http, only the
// first final status counts and headers changed afterwards are not sent;
// informational (1xx) statuses are not recorded.
func (rec *recorder) WriteHeader(code int) {
	if rec.status != 0 || (code >= 100 && code < 200) {
		return
	}
	rec.status = code
	rec.sent = rec.header.Clone()
}

// Write implements http.ResponseWriter.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	return rec.body.Write(b)
}

// WriteString implements io.StringWriter.
func (rec *recorder) WriteString(s string) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	return rec.body.WriteString(s)
}

// Flush implements http.Flusher as a no-op: the response is buffered until
// it is stored.
func (rec *recorder) Flush() {}

// Hijack implements http.Hijacker over the client's writer (through
// http.ResponseController, so wrappers with Unwrap count too).
func (rec *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if rec.under == nil {
		return nil, nil, http.ErrNotSupported
	}
	conn, rw, err := http.NewResponseController(rec.under).Hijack()
	if err == nil {
		rec.hijacked = true
	}
	return conn, rw, err
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.under }

// answered reports whether the handler wrote a status or body.
func (rec *recorder) answered() bool { return rec.status != 0 }

// response returns what was written; a handler that wrote nothing answered
// 200 with its current headers, as net/http would.
func (rec *recorder) response() *Response {
	if rec.status == 0 {
		rec.resp = Response{Status: http.StatusOK, Header: rec.header.Clone()}
	} else {
		rec.resp = Response{Status: rec.status, Header: rec.sent, Body: rec.body.Bytes()}
	}
	return &rec.resp
}

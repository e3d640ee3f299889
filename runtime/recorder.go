package idem

import (
	"bufio"
	"math"
	"net"
	"net/http"
)

// recorder is the buffering http.ResponseWriter a protected handler writes
// to: nothing reaches the client until the result is stored. Flush is a
// no-op (there is nothing to flush yet); Unwrap exposes the underlying
// writer to http.ResponseController for deadlines and the like. Hijack
// hands the connection over and marks the recorder: what the handler then
// answers never passes through it, so there is nothing to store.
//
// A body that would grow past limit is not buffered whole: the status,
// headers and what was buffered go to the client at once, and the rest
// streams through (Flush then flushes the client's writer). Only the status
// and headers are stored then, the body marked omitted, so a request holds
// at most limit bytes of its response.
type recorder struct {
	under    http.ResponseWriter // the client's writer; nil under Capture
	header   http.Header         // the handler's working header map
	sent     http.Header         // header snapshot taken at WriteHeader
	status   int                 // 0 until the handler answers
	hijacked bool                // the handler took the connection over
	streamed bool                // the body went past limit, to under
	limit    int                 // the stored-body limit; 0: no limit (nowhere to stream)
	body     []byte              // at most limit bytes when limit > 0
	resp     Response            // what response returns, kept here to save an allocation
}

func newRecorder(under http.ResponseWriter) *recorder {
	return &recorder{under: under, header: http.Header{}}
}

// streamPast makes the recorder stream the body past limit bytes to its
// client's writer (when it has one).
func (rec *recorder) streamPast(limit int64) {
	if rec.under != nil && limit > 0 {
		rec.limit = int(min(limit, int64(math.MaxInt)))
	}
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
	if rec.streamed || !rec.room(len(b)) {
		return rec.stream(b)
	}
	rec.body = append(rec.body, b...)
	return len(b), nil
}

// WriteString implements io.StringWriter.
func (rec *recorder) WriteString(s string) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	if rec.streamed || !rec.room(len(s)) {
		return rec.stream([]byte(s))
	}
	rec.body = append(rec.body, s...)
	return len(s), nil
}

// room reports whether n more bytes fit the limit, and makes room for them
// without growing the buffer past it.
func (rec *recorder) room(n int) bool {
	need := len(rec.body) + n
	if rec.limit == 0 || need <= cap(rec.body) {
		return true
	}
	if need > rec.limit {
		return false
	}
	grown := make([]byte, len(rec.body), min(max(2*cap(rec.body), need, 64), rec.limit))
	copy(grown, rec.body)
	rec.body = grown
	return true
}

// stream writes b to the client, after the status, headers and buffered
// body on the first call, and drops the buffer.
func (rec *recorder) stream(b []byte) (int, error) {
	if !rec.streamed {
		rec.streamed = true
		copyHeader(rec.under.Header(), rec.sent)
		rec.under.WriteHeader(rec.status)
		body := rec.body
		rec.body = nil
		if _, err := rec.under.Write(body); err != nil {
			return 0, err
		}
	}
	return rec.under.Write(b)
}

// Flush implements http.Flusher: a no-op while the response is buffered
// until it is stored, the client's writer's flush once it streams.
func (rec *recorder) Flush() {
	if rec.streamed {
		_ = http.NewResponseController(rec.under).Flush()
	}
}

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

// wrote reports whether the client's writer got anything from the handler
// (a hijack or a streamed body): the engine must not write to it again.
func (rec *recorder) wrote() bool { return rec.hijacked || rec.streamed }

// response returns what was written; a handler that wrote nothing answered
// 200 with its current headers, as net/http would. A streamed response has
// no body and is marked so: it is not written again, and is stored with its
// body omitted.
func (rec *recorder) response() *Response {
	switch {
	case rec.status == 0:
		rec.resp = Response{Status: http.StatusOK, Header: rec.header.Clone()}
	case rec.streamed:
		rec.resp = Response{Status: rec.status, Header: rec.sent, streamed: true}
	default:
		rec.resp = Response{Status: rec.status, Header: rec.sent, Body: rec.body}
	}
	return &rec.resp
}

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
	under    http.ResponseWriter   // the client's writer; nil without ServeBody's context
	header   http.Header           // the handler's working header map
	sent     http.Header           // the header as at WriteHeader, once copied (see sentHeader); nil before
	snap     [snapFields]sentField // the header's values at WriteHeader, when they fit
	nsnap    int                   // fields in snap; -1: they did not fit, and sent is a copy
	status   int                   // 0 until the handler answers
	hijacked bool                  // the handler took the connection over
	streamed bool                  // the body went past limit, to under
	limit    int                   // the stored-body limit; 0: no limit (nowhere to stream)
	body     []byte                // at most limit bytes when limit > 0
	resp     Response              // what response returns, kept here to save an allocation
	reqBody  bodyReader            // the handler's request body (Engine.Serve), kept here likewise
}

func newRecorder(under http.ResponseWriter) *recorder {
	return (*recorder)(nil).open(under)
}

// open readies rec, which must be zero (nil: a new one), to record for
// under, and returns it.
func (rec *recorder) open(under http.ResponseWriter) *recorder {
	if rec == nil {
		rec = new(recorder)
	}
	rec.under, rec.header = under, http.Header{}
	return rec
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
	rec.snapshot()
}

// snapFields is how many header values a recorder notes at WriteHeader
// without allocating (see snapshot): a header with more is copied there.
const snapFields = 6

// sentField is one value of a header noted at WriteHeader, or a name without
// values.
type sentField struct {
	name, value string
	kind        fieldKind
}

// fieldKind tells a value from a name whose values are nil or empty (which
// net/http tells apart: a nil Date suppresses the header).
type fieldKind uint8

const (
	fieldValue fieldKind = iota
	fieldNil
	fieldEmpty
)

// snapshot notes the header as the handler set it when it wrote its
// status. Header.Clone would cost three allocations on every response; the
// noted values cost none, and the handler's own map serves as the header
// sent as long as it still holds them (sentHeader), as it does unless the
// handler changes headers after WriteHeader. Strings do not change, so the
// noted values are exact.
func (rec *recorder) snapshot() {
	n := 0
	for name, values := range rec.header {
		if n+max(len(values), 1) > len(rec.snap) {
			rec.sent, rec.nsnap = rec.header.Clone(), -1
			return
		}
		switch {
		case values == nil:
			rec.snap[n] = sentField{name: name, kind: fieldNil}
			n++
		case len(values) == 0:
			rec.snap[n] = sentField{name: name, kind: fieldEmpty}
			n++
		}
		for _, v := range values {
			rec.snap[n] = sentField{name: name, value: v}
			n++
		}
	}
	rec.nsnap = n
}

// unchanged reports whether the handler's header map holds exactly what
// snapshot noted.
func (rec *recorder) unchanged() bool {
	if rec.nsnap < 0 {
		return false
	}
	names := 0
	for i := 0; i < rec.nsnap; names++ {
		f := rec.snap[i]
		values, ok := rec.header[f.name]
		switch {
		case !ok:
			return false
		case f.kind == fieldNil || f.kind == fieldEmpty:
			if (values == nil) != (f.kind == fieldNil) || len(values) != 0 {
				return false
			}
			i++
			continue
		case len(values) == 0:
			return false
		}
		for _, v := range values {
			if i == rec.nsnap || rec.snap[i] != (sentField{name: f.name, value: v}) {
				return false
			}
			i++
		}
	}
	return names == len(rec.header)
}

// sentHeader returns the header as it was at WriteHeader: the handler's own
// map when it is unchanged since, else a copy as it was (see freeze).
func (rec *recorder) sentHeader() http.Header {
	if rec.sent == nil && rec.unchanged() {
		return rec.header
	}
	rec.freeze()
	return rec.sent
}

// freeze sets sent, unless set, to a copy of the header as it was at
// WriteHeader, which the handler's later changes do not reach.
func (rec *recorder) freeze() {
	switch {
	case rec.sent != nil:
	case rec.unchanged():
		rec.sent = rec.header.Clone()
	default:
		rec.sent = make(http.Header, rec.nsnap)
		for _, f := range rec.snap[:rec.nsnap] {
			switch f.kind {
			case fieldNil:
				rec.sent[f.name] = nil
			case fieldEmpty:
				rec.sent[f.name] = []string{}
			default:
				rec.sent[f.name] = append(rec.sent[f.name], f.value)
			}
		}
	}
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
		rec.freeze() // the handler runs on: what it changes now is not sent
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
		rec.resp = Response{Status: rec.status, Header: rec.sentHeader(), Body: rec.body}
	}
	return &rec.resp
}

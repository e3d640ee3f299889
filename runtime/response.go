package idem

import (
	"context"
	"net/http"
	"slices"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Response is a captured, replayed or generated HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte

	// streamed: the response went to the client as the handler wrote it,
	// its body past the stored-body limit (see recorder); it is stored
	// with its body omitted and not written again.
	streamed bool
}

// Write writes the response to w: its headers (replacing values w already
// has under the same names), its status (200 when zero) and its body. A
// response the client already has, streamed past the stored-body limit
// (see idemgen.CaptureContext), is not written again.
func (r *Response) Write(w http.ResponseWriter) error { return r.write(w, copyHeader) }

// write is Write with set setting r's headers in w's.
func (r *Response) write(w http.ResponseWriter, set func(dst, src http.Header)) error {
	if r.streamed {
		return nil
	}
	set(w.Header(), r.Header)
	return writeBody(w, r.Status, r.Body)
}

// moveHeader sets every header of src in dst, with src's values: for a
// src that nobody uses afterwards.
func moveHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// copyHeader sets every header of src in dst, with values of its own.
func copyHeader(dst, src http.Header) { copyHeaderMore(dst, src, 0) }

// copyHeaderMore is copyHeader that also returns extra strings for the
// caller's own values, all of them usually in one allocation: the values
// of each name are a slice of one array, capped at its end so that an
// append to one never writes into the next (a name with more values than
// its share gets a copy of its own).
func copyHeaderMore(dst, src http.Header, extra int) (more []string) {
	vals := make([]string, 0, len(src)+extra) // one value a name, as usual
	for k, v := range src {
		switch n := len(vals); {
		case v == nil:
			dst[k] = nil
		case n+len(v) > cap(vals)-extra:
			dst[k] = slices.Clone(v)
		default:
			vals = append(vals, v...)
			dst[k] = vals[n:len(vals):len(vals)]
		}
	}
	return vals[len(vals) : len(vals)+extra]
}

// oneValue is more[i] set to v, as a header's only value.
func oneValue(more []string, i int, v string) []string {
	more[i] = v
	return more[i : i+1 : i+1]
}

// writeBody writes status (200 when zero) and body to w.
func writeBody(w http.ResponseWriter, status int, body []byte) error {
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if len(body) == 0 {
		return nil
	}
	_, err := w.Write(body)
	return err
}

// captureContext is idemgen.CaptureContext: it runs visit (a strict
// response object's VisitXResponse method) against a recorder and returns
// what it wrote. In the strict middleware, where ctx is the context
// [Engine.ServeStrict] gave the handler, a body larger than the stored-body
// limit is not buffered whole, but streamed past the limit to the client's
// writer (the one serveBody saw), and the response returned is marked so:
// stored without its body, and not written again.
func captureContext(ctx context.Context, visit func(w http.ResponseWriter) error) (*Response, error) {
	rec := leaseRecorder(ctx).open(nil)
	sb, _ := ctx.Value(strictBodyKey{}).(*strictBody)
	if sb != nil {
		rec.under = sb.w
		rec.streamPast(sb.limit)
	}
	err := visit(rec)
	if sb != nil && rec.wrote() {
		sb.wrote, sb.hijacked = true, rec.hijacked
	}
	switch {
	case err != nil:
		return nil, err
	case rec.hijacked: // its answer never passed through rec: store none
		return nil, errHijacked
	}
	return rec.response(), nil
}

// leaseRecorder returns the recorder allocated with the lease of the run
// whose context ctx is, the first time it is asked for (see
// keyedRequest.takeRecorder); nil otherwise.
func leaseRecorder(ctx context.Context) *recorder {
	if s := scopeFrom(ctx); s != nil && s.run != nil && s.run.l != nil {
		return s.run.l.k.takeRecorder()
	}
	return nil
}

// neverStored are response headers that are not stored even when the
// allow-list names them: credentials and challenges, cookies, hop-by-hop
// headers, and headers the engine or net/http computes itself.
var neverStored = map[string]bool{
	"Authorization":          true,
	"Www-Authenticate":       true,
	"Set-Cookie":             true,
	"Set-Cookie2":            true,
	"Connection":             true,
	"Keep-Alive":             true,
	"Proxy-Authenticate":     true,
	"Proxy-Authorization":    true,
	"Proxy-Connection":       true,
	"Te":                     true,
	"Trailer":                true,
	"Transfer-Encoding":      true,
	"Upgrade":                true,
	"Content-Length":         true,
	idemop.HeaderReplayed:    true,
	idemop.HeaderBodyOmitted: true,
	idemop.HeaderDegraded:    true,
}

// defaultReplayHeaders is the replay allow-list before WithReplayHeaders.
var defaultReplayHeaders = []string{"Content-Type", "Content-Language", "Location", "Etag", "Link"}

// replayAllowList returns the canonical header names stored for replay.
func replayAllowList(extra []string) []string {
	names := slices.Clone(defaultReplayHeaders)
	for _, n := range extra {
		n = http.CanonicalHeaderKey(n)
		if !neverStored[n] && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// newRecord builds the stored form of resp: allow-listed headers only, and
// the body only when it fits the limit. The record shares resp's body and
// header values, and its header map too when that holds allow-listed
// headers only (the usual case); resp must not change afterwards. It
// returns the record by value, for the lease to keep without an allocation.
func newRecord(resp *Response, allow []string, bodyLimit int64) idemstore.Record {
	rec := idemstore.Record{Status: resp.Status, Header: resp.Header}
	if len(resp.Header) == 0 || !onlyAllowed(resp.Header, allow) {
		rec.Header = http.Header{}
		for _, name := range allow {
			if v := resp.Header.Values(name); len(v) > 0 {
				rec.Header[name] = v
			}
		}
	}
	if resp.streamed || int64(len(resp.Body)) > bodyLimit {
		rec.BodyOmitted = true
	} else {
		rec.Body = resp.Body
	}
	return rec
}

// onlyAllowed reports whether every name in h is in allow and has values.
func onlyAllowed(h http.Header, allow []string) bool {
	for k, v := range h {
		if len(v) == 0 || !slices.Contains(allow, k) {
			return false
		}
	}
	return true
}

// replayResponse renders a stored record as the replay answer; writeReplay
// writes the same answer without building it.
func replayResponse(rec *idemstore.Record) *Response {
	h := make(http.Header, len(rec.Header)+2)
	body := replayHeader(h, rec)
	return &Response{Status: rec.Status, Header: h, Body: body}
}

// writeReplay writes the replay answer of a stored record to w, as
// replayResponse(rec).Write(w) does.
func writeReplay(w http.ResponseWriter, rec *idemstore.Record) error {
	body := replayHeader(w.Header(), rec)
	return writeBody(w, rec.Status, body)
}

// replayHeader sets the replay answer's headers of rec in h: the stored
// ones and the replay markers. It returns the body to answer.
func replayHeader(h http.Header, rec *idemstore.Record) []byte {
	more := copyHeaderMore(h, rec.Header, 2) // the markers' values, with the stored ones
	h[idemop.HeaderReplayed] = oneValue(more, 0, "true")
	if rec.BodyOmitted {
		h[idemop.HeaderBodyOmitted] = oneValue(more, 1, "true")
		return nil
	}
	return rec.Body
}

package idem

import (
	"net/http"
	"slices"
)

// Response is a captured, replayed or generated HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Write writes the response to w: its headers (replacing values w already
// has under the same names), its status (200 when zero) and its body.
func (r *Response) Write(w http.ResponseWriter) error {
	h := w.Header()
	for k, v := range r.Header {
		h[k] = slices.Clone(v)
	}
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if len(r.Body) == 0 {
		return nil
	}
	_, err := w.Write(r.Body)
	return err
}

// Capture runs visit (a strict response object's VisitXResponse method)
// against a recorder and returns what it wrote. It returns visit's error,
// if any, and no response.
func Capture(visit func(w http.ResponseWriter) error) (*Response, error) {
	rec := newRecorder(nil)
	if err := visit(rec); err != nil {
		return nil, err
	}
	return rec.response(), nil
}

// neverStored are response headers that are not stored even when the
// allow-list names them: cookies, hop-by-hop headers, and headers the
// engine or net/http computes itself.
var neverStored = map[string]bool{
	"Set-Cookie":          true,
	"Set-Cookie2":         true,
	"Connection":          true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Proxy-Connection":    true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
	"Content-Length":      true,
	HeaderReplayed:        true,
	HeaderBodyOmitted:     true,
	HeaderDegraded:        true,
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
// the body only when it fits the limit.
func newRecord(resp *Response, allow []string, bodyLimit int64) *Record {
	rec := &Record{Status: resp.Status, Header: http.Header{}}
	for _, name := range allow {
		if v := resp.Header.Values(name); len(v) > 0 {
			rec.Header[name] = slices.Clone(v)
		}
	}
	if int64(len(resp.Body)) > bodyLimit {
		rec.BodyOmitted = true
	} else {
		rec.Body = resp.Body
	}
	return rec
}

// replayResponse renders a stored record as the replay answer.
func replayResponse(rec *Record) *Response {
	h := rec.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(HeaderReplayed, "true")
	body := rec.Body
	if rec.BodyOmitted {
		h.Set(HeaderBodyOmitted, "true")
		body = nil
	}
	return &Response{Status: rec.Status, Header: h, Body: body}
}

// storable reports whether a response with status is stored and replayed:
// 2xx, 3xx, and 4xx other than 408, 409, 425 and 429 (whose retry may
// succeed). The design names 2xx and 4xx; a 3xx (303 See Other after a POST)
// is a final answer too, so it is stored rather than run again.
func storable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return status >= 200 && status < 500
}

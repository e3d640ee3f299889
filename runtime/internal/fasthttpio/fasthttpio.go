// Package fasthttpio is the fasthttp side of the fiber adapters
// (runtime/idemfiber for fiber v2, runtime/idemfiber3 for v3): a request's
// headers as the engine reads them, a response captured for the store, and
// an engine's Response written into fasthttp.
//
// It is written over the few methods of fasthttp's types that it calls,
// not over fasthttp itself, so that the runtime module it lives in does not
// require fasthttp: each adapter passes its own fiber's *fasthttp.Request
// header and *fasthttp.Response, whatever fasthttp version that fiber
// requires.
package fasthttpio

import (
	"bytes"
	"iter"
	"net/http"

	idem "github.com/idemgen/idemgen/runtime"
)

// RequestHeader is what Header reads of a *fasthttp.RequestHeader.
type RequestHeader interface {
	PeekAll(key string) [][]byte
}

// ResponseHeader is what Capture and Write use of a
// *fasthttp.ResponseHeader.
type ResponseHeader interface {
	All() iter.Seq2[[]byte, []byte]
	Del(key string)
	Add(key, value string)
}

// Response is what Capture and Write use of a *fasthttp.Response (its
// Header field is passed beside it).
type Response interface {
	StatusCode() int
	SetStatusCode(status int)
	Body() []byte
	SetBody(body []byte)
}

// Header is a fasthttp request's headers as the engine reads them
// (the Header of an idem.Request). H is a pointer type, so that a Header in an
// interface value allocates nothing.
type Header[H RequestHeader] struct{ H H }

// Headers returns h as the engine reads it.
func Headers[H RequestHeader](h H) Header[H] { return Header[H]{H: h} }

// Values implements the Header of an idem.Request.
func (h Header[H]) Values(name string) []string {
	all := h.H.PeekAll(name)
	if len(all) == 0 {
		return nil
	}
	vals := make([]string, len(all))
	for i, v := range all {
		vals[i] = string(v)
	}
	return vals
}

// Capture returns what res (with its header h) holds: its status, headers
// and body, copied (fasthttp reuses res after the request).
func Capture[R Response, H ResponseHeader](res R, h H) *idem.Response {
	out := make(http.Header)
	for k, v := range h.All() {
		name := string(k)
		out[name] = append(out[name], string(v))
	}
	return &idem.Response{Status: res.StatusCode(), Header: out, Body: bytes.Clone(res.Body())}
}

// Write writes resp into res (with its header h), as idem.Response.Write
// does into an http.ResponseWriter: its headers replace those res has
// under the same names, then its status (200 when zero) and body.
func Write[R Response, H ResponseHeader](res R, h H, resp *idem.Response) {
	for name, vals := range resp.Header {
		h.Del(name)
		for _, v := range vals {
			h.Add(name, v)
		}
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	res.SetStatusCode(status)
	res.SetBody(resp.Body)
}

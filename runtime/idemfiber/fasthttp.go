package idemfiber

import (
	"bytes"
	"net/http"

	"github.com/valyala/fasthttp"

	idem "github.com/idemgen/idemgen/runtime"
)

// The fasthttp side of the adapter: the request's headers for the engine,
// a response captured for the store, and a Response written into fasthttp.
// runtime/idemfiber3 has the same three over fiber v3's fasthttp, kept
// apart so that neither adapter's module requires the other's fiber.

// header is a fasthttp request's headers as the engine reads them.
type header struct{ h *fasthttp.RequestHeader }

// Values implements idem.HeaderValues.
func (h header) Values(name string) []string {
	all := h.h.PeekAll(name)
	if len(all) == 0 {
		return nil
	}
	vals := make([]string, len(all))
	for i, v := range all {
		vals[i] = string(v)
	}
	return vals
}

// capture returns what res holds: its status, headers and body, copied
// (fasthttp reuses res after the request).
func capture(res *fasthttp.Response) *idem.Response {
	h := make(http.Header)
	for k, v := range res.Header.All() {
		name := string(k)
		h[name] = append(h[name], string(v))
	}
	return &idem.Response{Status: res.StatusCode(), Header: h, Body: bytes.Clone(res.Body())}
}

// write writes resp into res, as idem.Response.Write does into an
// http.ResponseWriter: its headers replace those res has under the same
// names, then its status (200 when zero) and body.
func write(res *fasthttp.Response, resp *idem.Response) {
	for name, vals := range resp.Header {
		res.Header.Del(name)
		for _, v := range vals {
			res.Header.Add(name, v)
		}
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	res.SetStatusCode(status)
	res.SetBody(resp.Body)
}

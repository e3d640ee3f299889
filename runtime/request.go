package idem

import (
	"context"
	"errors"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// headerValues is a request's headers as the engine reads them: the values
// of a header, given its canonical name, in the order sent (none when
// absent). http.Header implements it.
type headerValues = interface {
	Values(name string) []string
}

// Request is a request shown to the engine in the parts that identify it,
// by an adapter for a framework that does not hand its handlers an
// *http.Request (fiber, on fasthttp): the adapter fills it from the
// framework's own request, without converting it. See [Engine.ServeRequest].
type Request struct {
	Method string                                    // the request method
	Path   string                                    // the path as sent, escaped (it carries the path parameters)
	Query  string                                    // the raw query, without '?'
	Header interface{ Values(name string) []string } // the request headers: a header's values, given its canonical name, in the order sent (http.Header has this method)
	Body   []byte                                    // the body as sent; nil without one

	// HTTP returns the request as an *http.Request. The engine calls it
	// only for what takes one: a [WithScope] function (not
	// [WithScopeFromHeader], which reads Header), and a [Reconciler]. With
	// HTTP nil, such an engine answers 500 scope-failed.
	HTTP func() (*http.Request, error)
}

// ServeRequest is the protocol of [Engine.Serve] for a request given in
// its parts, for framework adapters that are not net/http (fiber's): it
// identifies q (the key header or body key, the body limit, the scope, the
// fingerprint) and runs the protocol. run calls the handler with the given
// context (carrying the key and fence, see [FromContext]) and captures
// what it answered in the framework's own response.
//
// The returned Response is what the adapter must answer: run's own when
// the handler ran (with the [idemop.HeaderDegraded] header set when the store
// failed and the engine fails open), or a replay or a problem (400, 409,
// 413, 422, 503) for the adapter to write in place of anything the handler
// wrote. A non-nil error is run's, returned after the lease was released.
func (e *Engine) ServeRequest(ctx context.Context, q *Request, op *idemop.Operation, run func(ctx context.Context) (*Response, error)) (*Response, error) {
	run = requireResponse(op, run)
	k, prob := e.identifyRequest(ctx, q, op)
	switch {
	case prob != nil:
		return prob.Response(), nil
	case k == nil: // optional key, none sent: unprotected
		return run(ctx)
	}
	var r *http.Request
	if e.cfg.reconciler != nil && q.HTTP != nil {
		r, _ = q.HTTP() // nil on an error: the reconciler gets no request
	}
	return e.answerKeyed(ctx, e.protect(ctx, k, r, q.Body, run), run)
}

// precheck is idemgen.CheckRequest: the part of ServeRequest's identification that needs
// nothing decoded: the key header (missing, repeated, malformed) and the
// body limit. It returns the problem to answer (400, 413), or nil when q
// may go on. Adapters call it in front of a strict handler that decodes
// the body before the strict middleware runs, as idemgen.ServeBody is
// called for net/http.
func (e *Engine) precheck(q *Request, op *idemop.Operation) *Response {
	if _, _, prob := e.checkRequest(q, op); prob != nil {
		return prob.Response()
	}
	return nil
}

// checkRequest is readRequest for a request given in its parts: the key
// header's key, protect false when an optional key header is absent, or
// the problem to answer. The body was read by the framework already; it is
// bounded here.
func (e *Engine) checkRequest(q *Request, op *idemop.Operation) (key string, protect bool, prob *Problem) {
	if name := opKeyHeader(op); name != "" {
		k, hasKey, prob := e.keyFromValues(op, name, q.Header.Values(canonicalKeyHeader(name)))
		if prob != nil || !hasKey {
			return "", false, prob
		}
		key = k
	}
	if prob := encodedBodyProblem(q.Header.Values("Content-Encoding")); prob != nil {
		return "", false, prob
	}
	if int64(len(q.Body)) > e.cfg.bodyLimit {
		return "", false, tooLargeProblem(e.cfg.bodyLimit)
	}
	return key, true, nil
}

// identifyRequest is identifyHTTP for a request given in its parts.
func (e *Engine) identifyRequest(ctx context.Context, q *Request, op *idemop.Operation) (*keyedRequest, *Problem) {
	key, protect, prob := e.checkRequest(q, op)
	if prob != nil || !protect {
		return nil, prob
	}
	body := requestPayload(op, q.Header, q.Body)
	key, ok, prob := e.keyAndCredential(op, key, body, q.Header.Values)
	if prob != nil || !ok {
		return nil, prob
	}
	var scope string
	if e.cfg.scope != nil {
		s, err := e.requestScope(q)
		var prob *Problem
		if scope, prob = e.scopeKey(ctx, op, s, err); prob != nil {
			return nil, prob
		}
	}
	rl := requestLine{method: q.Method, path: q.Path, query: q.Query, header: q.Header}
	sum := fingerprintOf(op, &rl, body)
	body.free()
	return e.newKeyedRequest(op, scope, key, sum), nil
}

// requestScope is the scope function's answer for q: WithScopeFromHeader's
// from q's headers, WithScope's from q.HTTP.
func (e *Engine) requestScope(q *Request) (string, error) {
	if e.cfg.scopeKind == scopeHeader {
		return headerScope(q.Header, e.cfg.scopeHeader), nil
	}
	if q.HTTP == nil {
		return "", errNoHTTPRequest
	}
	r, err := q.HTTP()
	if err != nil {
		return "", err
	}
	return e.cfg.scope(r)
}

// errNoHTTPRequest is the scope failure of a WithScope function for a
// Request without HTTP.
var errNoHTTPRequest = errors.New("idem: the WithScope function takes an *http.Request, and the adapter gives none (idem.Request.HTTP is nil)")

// hasJSONContentType reports whether h's first Content-Type is JSON, as
// the net/http forms test r.Header.Get("Content-Type").
func hasJSONContentType(h headerValues) bool {
	ct := h.Values("Content-Type")
	return len(ct) > 0 && isJSONContentType(ct[0])
}

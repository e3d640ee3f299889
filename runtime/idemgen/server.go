package idemgen

import (
	"context"
	"errors"
	"net/http"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/genlink"
)

// Package idem's functions, handed over in its init (see genlink).
var (
	newEngineFor     = genlink.NewEngineFor.(func([]*idemop.Operation, idemstore.Store, ...idem.Option) *idem.Engine)
	serveBody        = genlink.ServeBody.(func(*idem.Engine, http.ResponseWriter, *http.Request, *idemop.Operation, http.HandlerFunc))
	checkRequest     = genlink.CheckRequest.(func(*idem.Engine, *idem.Request, *idemop.Operation) *idem.Response)
	captureContext   = genlink.CaptureContext.(func(context.Context, func(http.ResponseWriter) error) (*idem.Response, error))
	keyHeaderProblem = genlink.KeyHeaderProblem.(func(string, int) *idem.Problem)
)

// NewEngineFor is idem.NewEngine for an engine that serves ops, as the
// generated WithIdempotency and NewStrictHandlerWithIdempotency build it.
// Where one of ops declares Security (the spec requires authentication for
// it), a key space shared by every caller is never the silent default:
// unless opts choose one with idem.WithScope, idem.WithScopeFromHeader or
// idem.WithSharedKeySpace, NewEngineFor panics, naming the operations and
// the options to add. It panics too on a storage policy (Final, Transient)
// that idemop.CheckFinal refuses.
func NewEngineFor(ops []*idemop.Operation, store idemstore.Store, opts ...idem.Option) *idem.Engine {
	return newEngineFor(ops, store, opts...)
}

// ServeBody is the first step of the strict server for op, in front of
// oapi-codegen's strict handler (the generated strict constructor puts it
// there). Before anything is decoded, it checks the key header and reads
// the body, bounded by e's body limit, then calls next with r's body
// restored and the bytes in its context for idem.Engine.ServeStrict. It
// answers 400 (missing or malformed key, unreadable body) and 413 itself,
// without reading past the limit.
func ServeBody(e *idem.Engine, w http.ResponseWriter, r *http.Request, op *idemop.Operation, next http.HandlerFunc) {
	serveBody(e, w, r, op, next)
}

// CheckRequest is the part of idem.Engine.ServeRequest's identification
// that needs nothing decoded: the key header (missing, repeated,
// malformed) and the body limit. It returns the problem to answer (400,
// 413), or nil when q may go on. The fiber adapters call it in front of a
// strict handler that decodes the body before the strict middleware runs,
// as ServeBody is called for net/http.
func CheckRequest(e *idem.Engine, q *idem.Request, op *idemop.Operation) *idem.Response {
	return checkRequest(e, q, op)
}

// CaptureContext runs visit (a strict response object's VisitXResponse
// method) against a recorder and returns what it wrote; it returns visit's
// error, if any, and no response. In the strict middleware, where ctx is
// the context idem.Engine.ServeStrict gave the handler, a body larger than
// the stored-body limit is not buffered whole, but streamed past the limit
// to the client's writer (the one [ServeBody] saw), and the response
// returned is marked so: stored without its body, and not written again.
// Without ServeBody's context it buffers the whole body.
func CaptureContext(ctx context.Context, visit func(w http.ResponseWriter) error) (*idem.Response, error) {
	return captureContext(ctx, visit)
}

// KeyHeaderProblem is the answer to a key header name sent count times
// where it must be sent once: 400 missing-key for none, 400 invalid-key for
// several, as the engine answers them. Generated error handlers answer
// oapi-codegen's errors about a key header parameter with it.
func KeyHeaderProblem(name string, count int) *idem.Problem {
	return keyHeaderProblem(name, count)
}

// RequestProblem is the answer of generated error handlers to an error of
// oapi-codegen's generated router or strict decoder: the *idem.Problem that
// err wraps, or else 400 bad-request with err's text as its detail.
func RequestProblem(err error) *idem.Problem {
	var p *idem.Problem
	if errors.As(err, &p) {
		return p
	}
	return idem.NewProblem(http.StatusBadRequest, idemop.CodeBadRequest, err.Error())
}

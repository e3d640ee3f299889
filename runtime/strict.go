package idem

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// oapi-codegen's strict handler decodes the request body before any strict
// middleware runs, so the strict server is served in two steps: ServeBody
// runs first, in front of the decoder, and reads the body as the client
// sent it; ServeStrict runs in the strict middleware and takes those bytes
// from the context. Both answer exactly what Serve answers for the same
// request: the fingerprint and a body key come from the same bytes, never
// from the decoded, re-encoded body.

// strictBodyKey is the context key under which ServeBody leaves a
// *strictBody for ServeStrict.
type strictBodyKey struct{}

// strictBody is what ServeBody read of a request.
type strictBody struct {
	op      *idemop.Operation
	protect bool   // false: an optional key header is absent, the request runs unprotected
	key     string // the key header's key ("" for a body key)
	raw     []byte // the body as sent (nil when not read)

	w        http.ResponseWriter // the client's writer, for CaptureContext to stream to
	limit    int64               // the stored-body limit
	wrote    bool                // CaptureContext wrote to w: nothing more may be
	hijacked bool                // ... because the handler hijacked the connection

	// ctx and body are the context and the request body ServeBody gives
	// next, kept here to save their allocations.
	ctx  strictCtx
	body bodyReader
}

// strictCtx is what context.WithValue(parent, strictBodyKey{}, sb) would
// be, in a form a strictBody keeps for itself. Like a context.WithValue,
// it answers every other key, and Deadline, Done and Err, from its parent,
// so the context package finds the parent's cancellation through it.
type strictCtx struct {
	context.Context
	sb *strictBody
}

// Value implements context.Context.
func (c *strictCtx) Value(key any) any {
	if _, ok := key.(strictBodyKey); ok {
		return c.sb
	}
	return c.Context.Value(key)
}

// serveBody is idemgen.ServeBody: the first step of the strict server for
// op, in front of oapi-codegen's strict handler (the generated strict
// constructor puts it there). Before anything is decoded, it checks the key header and reads
// the body, bounded by the body limit, then calls next with r's body
// restored and the bytes in its context for [Engine.ServeStrict]. It
// answers 400 (missing or malformed key, unreadable body) and 413 itself,
// without reading past the limit.
func (e *Engine) serveBody(w http.ResponseWriter, r *http.Request, op *idemop.Operation, next http.HandlerFunc) {
	key, protect, raw, prob := e.readRequest(r, op)
	if prob != nil {
		_ = prob.Response().Write(w)
		return
	}
	sb := &strictBody{op: op, protect: protect, key: key, raw: raw, w: w, limit: e.cfg.storedBodyLimit}
	sb.ctx = strictCtx{Context: r.Context(), sb: sb}
	next(w, withBodyIn(&sb.ctx, r, raw, &sb.body))
}

// ServeStrict is Serve for oapi-codegen's strict server, in its middleware.
// It identifies the request from what idemgen.ServeBody read (ctx or r's
// context must carry it) and runs the protocol. run calls the strict
// handler with the given context and captures its response object with
// idemgen.CaptureContext. The returned Response is what the wrapper must write (fresh,
// replayed, or a problem); a non-nil error is the handler's own error,
// returned after the lease was released.
//
// Without ServeBody in front it never guesses the body from the decoded
// one: it answers 500 with code server-misconfigured and logs the call that
// is missing.
func (e *Engine) ServeStrict(ctx context.Context, r *http.Request, op *idemop.Operation, run func(ctx context.Context) (*Response, error)) (*Response, error) {
	run = requireResponse(op, run)
	sb, ok := ctx.Value(strictBodyKey{}).(*strictBody)
	if !ok {
		sb, ok = r.Context().Value(strictBodyKey{}).(*strictBody)
	}
	if !ok || sb.op.ID != op.ID {
		e.cfg.logger.ErrorContext(ctx, "idem: the strict middleware ran without the request body read before decoding; "+
			"build the strict handler with the generated NewStrictHandlerWithIdempotency (its router step calls idemgen.ServeBody)", "op", op.ID)
		return missingBodyProblem(op).Response(), nil
	}
	if !sb.protect {
		return run(ctx)
	}
	k, prob := e.identifyBody(r, op, sb.key, sb.raw)
	switch {
	case prob != nil:
		return prob.Response(), nil
	case k == nil:
		return run(ctx)
	}
	k.withRecorder = true // for CaptureContext
	o := e.protect(ctx, k, r, sb.raw, run)
	switch {
	case sb.hijacked && o.err != nil:
		return nil, o.err // the connection is not HTTP any more: nothing the wrapper writes reaches it
	case sb.wrote:
		// The client has the handler's answer, streamed past the
		// stored-body limit: whatever the handler or the store says now,
		// w is not ours. An error returned would have the strict error
		// handler write a 500 into the response the client is reading,
		// as the plain path never does; the log says what happened.
		if o.err != nil {
			e.cfg.logger.LogAttrs(ctx, levelWarn, "idem: the handler's response was streamed to the client before this failure; the client has it as far as it went",
				slog.String("op", op.ID), slog.Any("err", o.err))
		}
		return &Response{streamed: true}, nil
	}
	return e.answerKeyed(ctx, o, run)
}

// answerKeyed translates the outcome o of a handler that answers with a
// Response (the strict server, [Engine.ServeRequest]) into the Response to
// write, and run's error.
func (e *Engine) answerKeyed(ctx context.Context, o outcome, run func(ctx context.Context) (*Response, error)) (*Response, error) {
	switch o.kind {
	case ran:
		return o.resp, o.err
	case degraded:
		resp, err := run(ctx)
		if resp != nil {
			markDegraded(resp)
		}
		return resp, err
	}
	return o.problem(), nil
}

// missingBodyProblem answers a strict request that reached ServeStrict
// without ServeBody in front of the decoder: the server is wired wrong.
func missingBodyProblem(op *idemop.Operation) *Problem {
	return problemf(http.StatusInternalServerError, idemop.CodeServerMisconfigured,
		"operation %s: the idempotency layer's router step did not run (the server must be built with NewStrictHandlerWithIdempotency)", op.ID)
}

// requireResponse makes run's (nil, nil), which no response can be
// written from, an error: the lease is released and the wrapper answers 500.
func requireResponse(op *idemop.Operation, run func(ctx context.Context) (*Response, error)) func(ctx context.Context) (*Response, error) {
	return func(ctx context.Context) (*Response, error) {
		resp, err := run(ctx)
		if resp == nil && err == nil {
			return nil, fmt.Errorf("idem: %s: the strict handler returned no response", op.ID)
		}
		return resp, err
	}
}

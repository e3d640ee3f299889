package idemiris

import (
	"context"
	"net/http"

	"github.com/kataras/iris/v12"
	irisctx "github.com/kataras/iris/v12/context"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// Serve runs h under e's idempotency protocol for op, as the generated
// iris ServerInterface decorator does: it is [idem.Engine.Serve] with the
// handler's writes captured through a fresh iris response writer over the
// engine's recorder, and ctx's request replaced for h by the engine's (its
// body restored, its context carrying the key and fence: read them with
// idem.FromContext(ctx.Request().Context())). When the engine answers
// instead of h (a replay, 400, 409, 413, 422, 503), it writes to ctx's own
// writer. A panic in h releases the key and goes on to iris's recover
// middleware with ctx's own writer restored, still unwritten.
func Serve(e *idem.Engine, ctx iris.Context, op *idemop.Operation, h iris.Handler) {
	res, req := ctx.ResponseWriter(), ctx.Request()
	defer func() {
		ctx.ResetResponseWriter(res)
		ctx.ResetRequest(req)
	}()
	e.Serve(res, req, op, func(w http.ResponseWriter, r *http.Request) {
		ctx.ResetRequest(r)
		if w == http.ResponseWriter(res) {
			// No key and none required, or fail-open: h answers the client.
			h(ctx)
			return
		}
		_ = into(ctx, w, func(ctx iris.Context) error {
			h(ctx)
			return nil
		})
	})
}

// into runs visit with ctx writing to w through a fresh iris response
// writer, restored afterwards; a status visit set without a body is sent
// to w when it returns.
func into(ctx iris.Context, w http.ResponseWriter, visit func(ctx iris.Context) error) error {
	own := ctx.ResponseWriter()
	rw := irisctx.AcquireResponseWriter()
	rw.BeginResponse(w)
	ctx.ResetResponseWriter(rw)
	defer func() {
		ctx.ResetResponseWriter(own)
		rw.EndResponse() // back to iris's pool
	}()
	err := visit(ctx)
	rw.FlushResponse()
	return err
}

// ServeBody is [idemgen.ServeBody] for iris's strict server, as the
// generated NewStrictHandlerWithIdempotency calls it in front of the strict
// handler: it checks the key header and reads the body as the client sent
// it, bounded by the body limit (answering 400 or 413 itself, and stopping
// ctx's chain), then calls next with ctx's request carrying the bytes for
// [ServeStrict] and its body restored for oapi-codegen's decoder.
func ServeBody(e *idem.Engine, ctx iris.Context, op *idemop.Operation, next iris.Handler) {
	ran := false
	idemgen.ServeBody(e, ctx.ResponseWriter(), ctx.Request(), op, func(_ http.ResponseWriter, r *http.Request) {
		ran = true
		ctx.ResetRequest(r)
		next(ctx)
	})
	if !ran {
		ctx.StopExecution()
	}
}

// ServeStrict is [idem.Engine.ServeStrict] for iris's strict server, as the
// generated strict middleware calls it: it fingerprints the bytes
// [ServeBody] read, and run gets ctx with its request's context carrying
// the key and fence (the strict handler hands that context to the typed
// handler); ctx's request is restored afterwards.
func ServeStrict(e *idem.Engine, ctx iris.Context, op *idemop.Operation, run func(ctx iris.Context) (*idem.Response, error)) (*idem.Response, error) {
	req := ctx.Request()
	defer ctx.ResetRequest(req)
	return e.ServeStrict(req.Context(), req, op, func(c context.Context) (*idem.Response, error) {
		ctx.ResetRequest(req.WithContext(c))
		return run(ctx)
	})
}

// Capture is [idemgen.CaptureContext] for iris's strict response objects,
// which answer through ctx: it runs visit (a VisitXResponse method) with
// ctx writing to a recorder, and returns what it wrote. Under [ServeStrict]
// a body larger than the stored-body limit is streamed past the limit to
// the client, not buffered whole.
func Capture(ctx iris.Context, visit func(ctx iris.Context) error) (*idem.Response, error) {
	return idemgen.CaptureContext(ctx.Request().Context(), func(w http.ResponseWriter) error { return into(ctx, w, visit) })
}

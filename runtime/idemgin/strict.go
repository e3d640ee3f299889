package idemgin

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// ServeBody is [idemgen.ServeBody] for gin's strict server, as the
// generated NewStrictHandlerWithIdempotency calls it in front of the strict
// handler: it checks the key header and reads the body as the client sent
// it, bounded by the body limit, then calls next with c.Request carrying
// the bytes for [ServeStrict] and its body restored for oapi-codegen's
// decoder. When it answers 400 or 413 itself, it aborts c's chain.
func ServeBody(e *idem.Engine, c *gin.Context, op *idemop.Operation, next func(c *gin.Context)) {
	ran := false
	idemgen.ServeBody(e, c.Writer, c.Request, op, func(_ http.ResponseWriter, r *http.Request) {
		ran = true
		c.Request = r
		next(c)
	})
	if !ran {
		c.Abort()
	}
}

// ServeStrict is [idem.Engine.ServeStrict] for gin's strict server, as the
// generated strict middleware calls it: it fingerprints the bytes
// [ServeBody] read, and run gets c with c.Request's context carrying the
// key and fence (the strict handler hands that context to the typed
// handler); c.Request is restored afterwards.
//
// oapi-codegen's gin strict server hands the typed handler c itself as its
// context.Context, and a *gin.Context looks values up in c.Request's
// context only when the gin engine's ContextWithFallback is true. So that
// idem.FromContext, derived keys, idem.Step and the stores' transactions
// (pgstore.Tx, mysqlstore.Tx) reach the typed handler either way, run's c
// also keeps the handler's context under [idemstore.RunContextKey]. The
// request's cancellation and deadline reach the handler through c only
// with ContextWithFallback.
func ServeStrict(e *idem.Engine, c *gin.Context, op *idemop.Operation, run func(c *gin.Context) (*idem.Response, error)) (*idem.Response, error) {
	req := c.Request
	defer func() { c.Request = req; c.Delete(idemstore.RunContextKey) }()
	return e.ServeStrict(req.Context(), req, op, func(ctx context.Context) (*idem.Response, error) {
		c.Request = req.WithContext(ctx)
		c.Set(idemstore.RunContextKey, ctx)
		return run(c)
	})
}

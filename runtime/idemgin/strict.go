package idemgin

import (
	"context"

	"github.com/gin-gonic/gin"

	idem "github.com/idemgen/idemgen/runtime"
)

// ServeStrict is [idem.Engine.ServeStrict] for gin's strict server, as the
// generated strict middleware calls it: run gets c with c.Request's context
// carrying the key and fence (the strict handler hands that context to the
// typed handler), and c.Request is restored afterwards.
//
// oapi-codegen's gin strict server hands the typed handler c itself as its
// context.Context, and a *gin.Context looks values up in c.Request's
// context only when the gin engine's ContextWithFallback is true: set it
// for idem.FromContext (and the request's cancellation) to reach the typed
// handler.
func ServeStrict(e *idem.Engine, c *gin.Context, op *idem.Operation, body idem.Body, run func(c *gin.Context) (*idem.Response, error)) (*idem.Response, error) {
	req := c.Request
	defer func() { c.Request = req }()
	return e.ServeStrict(req.Context(), req, op, body, func(ctx context.Context) (*idem.Response, error) {
		c.Request = req.WithContext(ctx)
		return run(c)
	})
}

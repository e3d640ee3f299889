package idemecho

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// ServeBody is [idemgen.ServeBody] for echo's strict server, as the
// generated NewStrictHandlerWithIdempotency calls it in front of the strict
// handler: it checks the key header and reads the body as the client sent
// it, bounded by the body limit (answering 400 or 413 itself), then calls
// next with c's request carrying the bytes for [ServeStrict] and its body
// restored for oapi-codegen's decoder. next's error is returned, for echo
// to render.
func ServeBody(e *idem.Engine, c echo.Context, op *idemop.Operation, next echo.HandlerFunc) error {
	req := c.Request()
	var err error
	idemgen.ServeBody(e, c.Response(), req, op, func(_ http.ResponseWriter, r *http.Request) {
		c.SetRequest(r)
		err = next(c)
	})
	return err
}

// ServeStrict is [idem.Engine.ServeStrict] for echo's strict server, as the
// generated strict middleware calls it: it fingerprints the bytes
// [ServeBody] read, and run gets c with its request's context carrying the
// key and fence (the strict handler hands that context to the typed
// handler); c's request is restored afterwards.
func ServeStrict(e *idem.Engine, c echo.Context, op *idemop.Operation, run func(c echo.Context) (*idem.Response, error)) (*idem.Response, error) {
	req := c.Request()
	defer c.SetRequest(req)
	return e.ServeStrict(req.Context(), req, op, func(ctx context.Context) (*idem.Response, error) {
		c.SetRequest(req.WithContext(ctx))
		return run(c)
	})
}

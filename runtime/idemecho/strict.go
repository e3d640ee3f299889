package idemecho

import (
	"context"

	"github.com/labstack/echo/v4"

	idem "github.com/idemgen/idemgen/runtime"
)

// ServeStrict is [idem.Engine.ServeStrict] for echo's strict server, as the
// generated strict middleware calls it: run gets c with its request's
// context carrying the key and fence (the strict handler hands that context
// to the typed handler), and c's request is restored afterwards.
func ServeStrict(e *idem.Engine, c echo.Context, op *idem.Operation, body idem.Body, run func(c echo.Context) (*idem.Response, error)) (*idem.Response, error) {
	req := c.Request()
	defer c.SetRequest(req)
	return e.ServeStrict(req.Context(), req, op, body, func(ctx context.Context) (*idem.Response, error) {
		c.SetRequest(req.WithContext(ctx))
		return run(c)
	})
}

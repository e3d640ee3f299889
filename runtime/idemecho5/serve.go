package idemecho5

import (
	"net/http"

	"github.com/labstack/echo/v5"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// Serve runs h under e's idempotency protocol for op, as the generated
// echo v5 ServerInterface decorator does: it is [idem.Engine.Serve] with
// the handler's writes captured through a fresh echo.Response over the
// engine's recorder, and c's request replaced for h by the engine's (its
// body restored, its context carrying the key and fence: read them with
// idem.FromContext(c.Request().Context())).
//
// An error h returns is rendered at once by the echo instance's
// HTTPErrorHandler, so that the response stored and replayed is the one
// the client gets; Serve then returns nil, and echo renders nothing more.
// A panic in h releases the key and goes on to echo's Recover middleware
// with c's own response restored, still uncommitted.
func Serve(e *idem.Engine, c *echo.Context, op *idemop.Operation, h echo.HandlerFunc) error {
	res, req := c.Response(), c.Request()
	defer func() {
		c.SetResponse(res)
		c.SetRequest(req)
	}()
	e.Serve(res, req, op, func(w http.ResponseWriter, r *http.Request) {
		c.SetRequest(r)
		if w != res {
			// The engine records: h writes to its recorder. Otherwise (no
			// key and none required, or fail-open) h answers the client.
			c.SetResponse(echo.NewResponse(w, c.Logger()))
		}
		if err := h(c); err != nil {
			c.Echo().HTTPErrorHandler(c, err)
		}
	})
	return nil
}

package idemfiber3

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/fasthttpio"
)

// Serve runs h under e's idempotency protocol for op, as the generated
// fiber v3 ServerInterface decorator does. h answers into c's response,
// with c.Context() carrying the key and fence (read them with
// idem.FromContext(c.Context())); what it answered is stored. When the
// engine answers instead of h (a replay, 400, 409, 413, 422, 503), it
// writes into c's response.
//
// An error h returns is rendered at once by the app's ErrorHandler, so
// that the response stored and replayed is the one the client gets; Serve
// then returns nil, and fiber renders nothing more. A panic in h releases
// the key and goes on to fiber's recover middleware with c's response
// reset.
func Serve(e *idem.Engine, c fiber.Ctx, op *idemop.Operation, h fiber.Handler) error {
	return ServeStrict(e, c, op, func(c fiber.Ctx) error {
		if err := h(c); err != nil && c.App().ErrorHandler(c, err) != nil {
			return c.SendStatus(fiber.StatusInternalServerError) // as fiber does when its ErrorHandler fails
		}
		return nil
	})
}

// ServeStrict runs run under e's idempotency protocol for op, as the
// generated strict middleware does: run calls the strict handler and
// visits its response object, which answers into c's response, with
// c.Context() carrying the key and fence (the strict handler hands it to
// the typed handler). An error run returns releases the key and is
// returned, for fiber to render; nothing is stored.
func ServeStrict(e *idem.Engine, c fiber.Ctx, op *idemop.Operation, h fiber.Handler) error {
	ctx := c.Context()
	defer c.SetContext(ctx)
	var own *idem.Response // what h answered, when it ran
	done := false
	defer func() {
		if own == nil && !done {
			// h panicked: its writes do not reach the recover middleware.
			c.Response().Reset()
		}
	}()
	ran := false
	resp, err := e.ServeRequest(ctx, request(c), op, func(ctx context.Context) (*idem.Response, error) {
		ran = true
		c.SetContext(ctx)
		if err := h(c); err != nil {
			return nil, err
		}
		own = fasthttpio.Capture(c.Response(), &c.Response().Header)
		return own, nil
	})
	done = true
	switch {
	case err != nil:
		return err
	case resp == own:
		if resp.Header.Get(idemop.HeaderDegraded) != "" {
			c.Set(idemop.HeaderDegraded, "true")
		}
		return nil
	case ran:
		// The engine answers in place of h's answer (its lease was taken
		// over while it ran): none of h's headers go out.
		c.Response().Reset()
	}
	fasthttpio.Write(c.Response(), &c.Response().Header, resp)
	return nil
}

// request shows the engine c's request in its parts.
func request(c fiber.Ctx) *idem.Request {
	req := c.Request()
	return &idem.Request{
		Method: c.Method(),
		Path:   string(req.URI().PathOriginal()),
		Query:  string(req.URI().QueryString()),
		Header: fasthttpio.Headers(&req.Header),
		Body:   req.Body(),
		HTTP:   func() (*http.Request, error) { return adaptor.ConvertRequest(c, false) },
	}
}

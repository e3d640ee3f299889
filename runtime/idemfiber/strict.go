package idemfiber

import (
	"github.com/gofiber/fiber/v2"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/fasthttpio"
)

// ServeBody is the step in front of fiber's strict handler, as the
// generated NewStrictHandlerWithIdempotency puts it there: before the
// strict handler decodes anything, it answers a missing or malformed key
// header (400) and a body over the limit (413) itself
// ([idemgen.CheckRequest]); otherwise it calls next. fasthttp keeps
// the body as the client sent it, for [ServeStrict] to fingerprint.
func ServeBody(e *idem.Engine, c *fiber.Ctx, op *idemop.Operation, next fiber.Handler) error {
	if resp := idemgen.CheckRequest(e, request(c), op); resp != nil {
		fasthttpio.Write(c.Response(), &c.Response().Header, resp)
		return nil
	}
	return next(c)
}

package e2e_test

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	fiber "github.com/gofiber/fiber/v2"
	fiber3 "github.com/gofiber/fiber/v3"
	"github.com/kataras/iris/v12"
	"github.com/labstack/echo/v4"
	echo5 "github.com/labstack/echo/v5"

	"github.com/idemgen/idemgen/internal/e2e/hooks/echo5hooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/echohooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/fiber3hooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/fiberhooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/ginhooks"
	"github.com/idemgen/idemgen/internal/e2e/hooks/irishooks"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// payments as the receiver interface of each framework beyond net/http.
type (
	echoPayments   struct{ *payments }
	echo5Payments  struct{ *payments }
	ginPayments    struct{ *payments }
	irisPayments   struct{ *payments }
	fiberPayments  struct{ *payments }
	fiber3Payments struct{ *payments }
)

func (p echoPayments) HandleRefundSettledCallback(ctx echo.Context) error {
	return p.HandleOrderPaidWebhook(ctx)
}

func (p echoPayments) HandleOrderPaidWebhook(ctx echo.Context) error {
	status, out := p.receive(ctx.Request().Context(), readAll(ctx.Request()))
	return ctx.JSONBlob(status, out)
}

func (p echo5Payments) HandleRefundSettledCallback(ctx *echo5.Context) error {
	return p.HandleOrderPaidWebhook(ctx)
}

func (p echo5Payments) HandleOrderPaidWebhook(ctx *echo5.Context) error {
	status, out := p.receive(ctx.Request().Context(), readAll(ctx.Request()))
	return ctx.JSONBlob(status, out)
}

func (p ginPayments) HandleRefundSettledCallback(c *gin.Context) {
	p.HandleOrderPaidWebhook(c)
}

func (p ginPayments) HandleOrderPaidWebhook(c *gin.Context) {
	status, out := p.receive(c.Request.Context(), readAll(c.Request))
	c.Data(status, "application/json", out)
}

func (p irisPayments) HandleRefundSettledCallback(ctx iris.Context) {
	p.HandleOrderPaidWebhook(ctx)
}

func (p irisPayments) HandleOrderPaidWebhook(ctx iris.Context) {
	status, out := p.receive(ctx.Request().Context(), readAll(ctx.Request()))
	ctx.StatusCode(status)
	ctx.ContentType("application/json")
	_, _ = ctx.Write(out)
}

func (p fiberPayments) HandleRefundSettledCallback(c *fiber.Ctx) error {
	return p.HandleOrderPaidWebhook(c)
}

func (p fiberPayments) HandleOrderPaidWebhook(c *fiber.Ctx) error {
	status, out := p.receive(c.UserContext(), c.Body())
	c.Set("Content-Type", "application/json")
	return c.Status(status).Send(out)
}

func (p fiber3Payments) HandleRefundSettledCallback(c fiber3.Ctx) error {
	return p.HandleOrderPaidWebhook(c)
}

func (p fiber3Payments) HandleOrderPaidWebhook(c fiber3.Ctx) error {
	status, out := p.receive(c.Context(), c.Body())
	c.Set("Content-Type", "application/json")
	return c.Status(status).Send(out)
}

// readAll is r's body, read whole.
func readAll(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// frameworkReceivers are the echo v4 and v5, gin, iris and fiber v2 and v3
// receivers, each mounted as its framework mounts a handler.
func frameworkReceivers() []receiver {
	return []receiver{
		{"echo", func(p *payments, store idemstore.Store) http.Handler {
			e := echo.New()
			e.Use(echoRecover)
			e.POST(hookPath, echohooks.OrderPaidWebhookHandler(echohooks.WithIdempotentWebhooks(echoPayments{p}, store)))
			e.POST(callbackPath, echohooks.RefundSettledCallbackHandler(echohooks.WithIdempotentCallbacks(echoPayments{p}, store)))
			return e
		}},
		{"echo v5", func(p *payments, store idemstore.Store) http.Handler {
			e := echo5.New()
			e.POST(hookPath, echo5hooks.OrderPaidWebhookHandler(echo5hooks.WithIdempotentWebhooks(echo5Payments{p}, store)))
			e.POST(callbackPath, echo5hooks.RefundSettledCallbackHandler(echo5hooks.WithIdempotentCallbacks(echo5Payments{p}, store)))
			return e
		}},
		{"gin", func(p *payments, store idemstore.Store) http.Handler {
			r := ginRouter()
			r.POST(hookPath, ginhooks.OrderPaidWebhookHandler(ginhooks.WithIdempotentWebhooks(ginPayments{p}, store)))
			r.POST(callbackPath, ginhooks.RefundSettledCallbackHandler(ginhooks.WithIdempotentCallbacks(ginPayments{p}, store)))
			return r
		}},
		{"iris", func(p *payments, store idemstore.Store) http.Handler {
			app := irisApp()
			app.Post(hookPath, irishooks.OrderPaidWebhookHandler(irishooks.WithIdempotentWebhooks(irisPayments{p}, store)))
			app.Post(callbackPath, irishooks.RefundSettledCallbackHandler(irishooks.WithIdempotentCallbacks(irisPayments{p}, store)))
			if err := app.Build(); err != nil { // as oapi-codegen's RegisterHandlers does
				panic(err)
			}
			return app
		}},
		{"fiber", func(p *payments, store idemstore.Store) http.Handler {
			app := fiberApp()
			app.Post(hookPath, fiberhooks.OrderPaidWebhookHandler(fiberhooks.WithIdempotentWebhooks(fiberPayments{p}, store)))
			app.Post(callbackPath, fiberhooks.RefundSettledCallbackHandler(fiberhooks.WithIdempotentCallbacks(fiberPayments{p}, store)))
			return fiberHandler{app}
		}},
		{"fiber v3", func(p *payments, store idemstore.Store) http.Handler {
			app := fiber3App()
			app.Post(hookPath, fiber3hooks.OrderPaidWebhookHandler(fiber3hooks.WithIdempotentWebhooks(fiber3Payments{p}, store)))
			app.Post(callbackPath, fiber3hooks.RefundSettledCallbackHandler(fiber3hooks.WithIdempotentCallbacks(fiber3Payments{p}, store)))
			return fiber3Handler{app}
		}},
	}
}

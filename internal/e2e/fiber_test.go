package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/idemgen/idemgen/internal/e2e/fiberapi"
	"github.com/idemgen/idemgen/internal/e2e/fiberstrictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// fiberServers are the fiber v2 forms of serversWith.
func fiberServers(opts ...idem.Option) []server {
	return []server{
		{"fiber plain", func(s *shop, store idemstore.Store) http.Handler {
			app := fiberApp()
			fiberapi.RegisterHandlers(app, fiberapi.WithIdempotency(fiberShop{s}, store, opts...))
			return fiberHandler{app}
		}, false},
		{"fiber strict", func(s *shop, store idemstore.Store) http.Handler {
			app := fiberApp()
			fiberstrictapi.RegisterHandlers(app, fiberstrictapi.NewStrictHandlerWithIdempotency(fiberStrictShop{s}, nil, store, opts...))
			return fiberHandler{app}
		}, false},
	}
}

// fiberApp is a fiber v2 app whose recover middleware answers 500.
func fiberApp() *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(recover.New())
	return app
}

// fiberHandler serves a fiber app to the tests' net/http requests through
// app.Test, which runs fasthttp on an in-memory connection.
type fiberHandler struct{ app *fiber.App }

func (h fiberHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, err := h.app.Test(r, -1)
	if err != nil {
		http.Error(w, "fiber: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	copyResponse(w, res)
}

// copyResponse writes res to w.
func copyResponse(w http.ResponseWriter, res *http.Response) {
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

// fiberShop is the shop as a fiber ServerInterface. It answers its
// failures by returning an error, which the app's ErrorHandler renders:
// the generated decorator must render it before it records.
type fiberShop struct{ *shop }

var _ fiberapi.ServerInterface = fiberShop{}

func (s fiberShop) ListOrders(c *fiber.Ctx) error {
	return c.Status(http.StatusOK).JSON([]fiberapi.Order{})
}

func (s fiberShop) CreateOrder(c *fiber.Ctx, _ fiberapi.CreateOrderParams) error {
	var in fiberapi.NewOrder
	if err := json.Unmarshal(c.Body(), &in); err != nil {
		return fiber.NewError(http.StatusBadRequest, err.Error())
	}
	o, status := s.create(c.UserContext(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		return fiber.NewError(status, "try again")
	}
	c.Set("Location", "/orders/"+o.ID)
	c.Set("Set-Cookie", s.cookie())
	return c.Status(http.StatusCreated).JSON(fiberapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s fiberShop) ShipOrder(c *fiber.Ctx, orderID string, _ fiberapi.ShipOrderParams) error {
	o := s.ship(orderID)
	return c.Status(http.StatusAccepted).JSON(fiberapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s fiberShop) CreatePayment(c *fiber.Ctx) error {
	var in fiberapi.NewPayment
	if err := json.Unmarshal(c.Body(), &in); err != nil {
		return fiber.NewError(http.StatusBadRequest, err.Error())
	}
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		return c.Status(status).JSON(fiberapi.Error{Message: msg})
	}
	return c.Status(http.StatusCreated).JSON(fiberapi.Payment{Id: id, Amount: in.Amount})
}

func (s fiberShop) UploadFile(c *fiber.Ctx) error {
	mr := multipart.NewReader(bytes.NewReader(c.Body()), string(c.Request().Header.MultipartFormBoundary()))
	id, purpose, size, err := s.upload(mr)
	if err != nil {
		return fiber.NewError(http.StatusBadRequest, err.Error())
	}
	return c.Status(http.StatusCreated).JSON(fiberapi.File{Id: id, Purpose: purpose, Size: size})
}

// fiberStrictShop is the shop as the fiber strict server, whose response
// objects answer through fiber's context.
type fiberStrictShop struct{ *shop }

var _ fiberstrictapi.StrictServerInterface = fiberStrictShop{}

func (s fiberStrictShop) ListOrders(context.Context, fiberstrictapi.ListOrdersRequestObject) (fiberstrictapi.ListOrdersResponseObject, error) {
	return fiberstrictapi.ListOrders200JSONResponse{}, nil
}

func (s fiberStrictShop) CreateOrder(ctx context.Context, req fiberstrictapi.CreateOrderRequestObject) (fiberstrictapi.CreateOrderResponseObject, error) {
	o, status := s.create(ctx, req.Body.Item, req.Body.Quantity)
	if status != http.StatusCreated {
		return fiberstrictapi.CreateOrder503Response{}, nil
	}
	return fiberstrictapi.CreateOrder201JSONResponse{
		Body:    fiberstrictapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"},
		Headers: fiberstrictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID), SetCookie: ptr(s.cookie())},
	}, nil
}

func (s fiberStrictShop) ShipOrder(_ context.Context, req fiberstrictapi.ShipOrderRequestObject) (fiberstrictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return fiberstrictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s fiberStrictShop) CreatePayment(_ context.Context, req fiberstrictapi.CreatePaymentRequestObject) (fiberstrictapi.CreatePaymentResponseObject, error) {
	switch id, status, msg := s.charge(req.Body.Amount); status {
	case http.StatusPaymentRequired:
		return fiberstrictapi.CreatePayment402JSONResponse{Message: msg}, nil
	case http.StatusInternalServerError:
		return fiberstrictapi.CreatePayment500JSONResponse{Message: msg}, nil
	default:
		return fiberstrictapi.CreatePayment201JSONResponse{Id: id, Amount: req.Body.Amount}, nil
	}
}

func (s fiberStrictShop) UploadFile(_ context.Context, req fiberstrictapi.UploadFileRequestObject) (fiberstrictapi.UploadFileResponseObject, error) {
	id, purpose, size, err := s.upload(req.Body)
	if err != nil {
		return nil, err
	}
	return fiberstrictapi.UploadFile201JSONResponse{Id: id, Purpose: purpose, Size: size}, nil
}

// fasthttp reports whether the server runs on fasthttp (fiber v2 and v3),
// which reads a request's whole body, up to fiber's BodyLimit, before any
// handler runs: the engine's body limit applies to what it read.
func (s server) fasthttp() bool { return strings.HasPrefix(s.name, "fiber") }

// listen serves the app on l until the test ends.
func (h fiberHandler) listen(l net.Listener) func() {
	go func() { _ = h.app.Listener(l) }()
	return func() { _ = h.app.Shutdown() }
}

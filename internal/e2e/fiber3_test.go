package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net"
	"net/http"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/idemgen/idemgen/internal/e2e/fiber3api"
	"github.com/idemgen/idemgen/internal/e2e/fiber3strictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// fiber3Servers are the fiber v3 forms of serversWith.
func fiber3Servers(opts ...idem.Option) []server {
	return []server{
		{"fiber3 plain", func(s *shop, store idemstore.Store) http.Handler {
			app := fiber3App()
			fiber3api.RegisterHandlers(app, fiber3api.WithIdempotency(fiber3Shop{s}, store, opts...))
			return fiber3Handler{app}
		}, false},
		{"fiber3 strict", func(s *shop, store idemstore.Store) http.Handler {
			app := fiber3App()
			fiber3strictapi.RegisterHandlers(app, fiber3strictapi.NewStrictHandlerWithIdempotency(fiber3StrictShop{s}, nil, store, opts...))
			return fiber3Handler{app}
		}, false},
	}
}

// fiber3App is a fiber v3 app whose recover middleware answers 500.
func fiber3App() *fiber.App {
	app := fiber.New()
	app.Use(recover.New())
	return app
}

// fiber3Handler serves a fiber app to the tests' net/http requests through
// app.Test, which runs fasthttp on an in-memory connection.
type fiber3Handler struct{ app *fiber.App }

func (h fiber3Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, err := h.app.Test(r, fiber.TestConfig{})
	if err != nil {
		http.Error(w, "fiber: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	copyResponse(w, res)
}

// fiber3Shop is the shop as a fiber ServerInterface. It answers its
// failures by returning an error, which the app's ErrorHandler renders:
// the generated decorator must render it before it records.
type fiber3Shop struct{ *shop }

var _ fiber3api.ServerInterface = fiber3Shop{}

func (s fiber3Shop) ListOrders(c fiber.Ctx) error {
	return c.Status(http.StatusOK).JSON([]fiber3api.Order{})
}

func (s fiber3Shop) CreateOrder(c fiber.Ctx, _ fiber3api.CreateOrderParams) error {
	var in fiber3api.NewOrder
	if err := json.Unmarshal(c.Body(), &in); err != nil {
		return fiber.NewError(http.StatusBadRequest, err.Error())
	}
	o, status := s.create(c.Context(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		return fiber.NewError(status, "try again")
	}
	c.Set("Location", "/orders/"+o.ID)
	c.Set("Set-Cookie", s.cookie())
	return c.Status(http.StatusCreated).JSON(fiber3api.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s fiber3Shop) ShipOrder(c fiber.Ctx, orderID string, _ fiber3api.ShipOrderParams) error {
	o := s.ship(orderID)
	return c.Status(http.StatusAccepted).JSON(fiber3api.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s fiber3Shop) CreatePayment(c fiber.Ctx) error {
	var in fiber3api.NewPayment
	if err := json.Unmarshal(c.Body(), &in); err != nil {
		return fiber.NewError(http.StatusBadRequest, err.Error())
	}
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		return c.Status(status).JSON(fiber3api.Error{Message: msg})
	}
	return c.Status(http.StatusCreated).JSON(fiber3api.Payment{Id: id, Amount: in.Amount})
}

func (s fiber3Shop) UploadFile(c fiber.Ctx) error {
	mr := multipart.NewReader(bytes.NewReader(c.Body()), string(c.Request().Header.MultipartFormBoundary()))
	id, purpose, size, err := s.upload(mr)
	if err != nil {
		return fiber.NewError(http.StatusBadRequest, err.Error())
	}
	return c.Status(http.StatusCreated).JSON(fiber3api.File{Id: id, Purpose: purpose, Size: size})
}

// fiber3StrictShop is the shop as the fiber strict server, whose response
// objects answer through fiber's context.
type fiber3StrictShop struct{ *shop }

var _ fiber3strictapi.StrictServerInterface = fiber3StrictShop{}

func (s fiber3StrictShop) ListOrders(context.Context, fiber3strictapi.ListOrdersRequestObject) (fiber3strictapi.ListOrdersResponseObject, error) {
	return fiber3strictapi.ListOrders200JSONResponse{}, nil
}

func (s fiber3StrictShop) CreateOrder(ctx context.Context, req fiber3strictapi.CreateOrderRequestObject) (fiber3strictapi.CreateOrderResponseObject, error) {
	o, status := s.create(ctx, req.Body.Item, req.Body.Quantity)
	if status != http.StatusCreated {
		return fiber3strictapi.CreateOrder503Response{}, nil
	}
	return fiber3strictapi.CreateOrder201JSONResponse{
		Body:    fiber3strictapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"},
		Headers: fiber3strictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID), SetCookie: ptr(s.cookie())},
	}, nil
}

func (s fiber3StrictShop) ShipOrder(_ context.Context, req fiber3strictapi.ShipOrderRequestObject) (fiber3strictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return fiber3strictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s fiber3StrictShop) CreatePayment(_ context.Context, req fiber3strictapi.CreatePaymentRequestObject) (fiber3strictapi.CreatePaymentResponseObject, error) {
	switch id, status, msg := s.charge(req.Body.Amount); status {
	case http.StatusPaymentRequired:
		return fiber3strictapi.CreatePayment402JSONResponse{Message: msg}, nil
	case http.StatusInternalServerError:
		return fiber3strictapi.CreatePayment500JSONResponse{Message: msg}, nil
	default:
		return fiber3strictapi.CreatePayment201JSONResponse{Id: id, Amount: req.Body.Amount}, nil
	}
}

func (s fiber3StrictShop) UploadFile(_ context.Context, req fiber3strictapi.UploadFileRequestObject) (fiber3strictapi.UploadFileResponseObject, error) {
	id, purpose, size, err := s.upload(req.Body)
	if err != nil {
		return nil, err
	}
	return fiber3strictapi.UploadFile201JSONResponse{Id: id, Purpose: purpose, Size: size}, nil
}

// listen serves the app on l until the test ends.
func (h fiber3Handler) listen(l net.Listener) func() {
	go func() { _ = h.app.Listener(l, fiber.ListenConfig{DisableStartupMessage: true}) }()
	return func() { _ = h.app.Shutdown() }
}

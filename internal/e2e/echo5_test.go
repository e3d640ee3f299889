package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/idemgen/idemgen/internal/e2e/echo5api"
	"github.com/idemgen/idemgen/internal/e2e/echo5strictapi"
	"github.com/idemgen/idemgen/internal/e2e/strictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// echo5Servers are the echo v5 forms of serversWith.
func echo5Servers(opts ...idem.Option) []server {
	return []server{
		{"echo5 plain", func(s *shop, store idemstore.Store) http.Handler {
			e := echo.New()
			e.Use(echo5Recover)
			echo5api.RegisterHandlers(e, echo5api.WithIdempotency(echo5Shop{s}, store, opts...))
			return e
		}, false},
		{"echo5 strict", func(s *shop, store idemstore.Store) http.Handler {
			e := echo.New()
			e.Use(echo5Recover)
			echo5strictapi.RegisterHandlers(e, echo5strictapi.NewStrictHandlerWithIdempotency(echo5StrictShop{strictShop{s}}, nil, store, opts...))
			return e
		}, false},
	}
}

// echo5Recover answers 500 for a handler that panics, as echo's Recover
// middleware does, through c's response: the decorator must have restored
// it, uncommitted.
func echo5Recover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = echo.NewHTTPError(http.StatusInternalServerError, "panic")
			}
		}()
		return next(c)
	}
}

// echo5Shop is the shop as an echo ServerInterface. It answers its failures
// by returning an error, which echo renders after the handler returns: the
// generated decorator must render it before it records.
type echo5Shop struct{ *shop }

var _ echo5api.ServerInterface = echo5Shop{}

func (s echo5Shop) ListOrders(ctx *echo.Context) error {
	return ctx.JSON(http.StatusOK, []echo5api.Order{})
}

func (s echo5Shop) CreateOrder(ctx *echo.Context, _ echo5api.CreateOrderParams) error {
	var in echo5api.NewOrder
	if err := json.NewDecoder(ctx.Request().Body).Decode(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	o, status := s.create(ctx.Request().Context(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		return echo.NewHTTPError(status, "try again")
	}
	ctx.Response().Header().Set("Location", "/orders/"+o.ID)
	ctx.Response().Header().Set("Set-Cookie", s.cookie())
	return ctx.JSON(http.StatusCreated, echo5api.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s echo5Shop) ShipOrder(ctx *echo.Context, orderID string, _ echo5api.ShipOrderParams) error {
	o := s.ship(orderID)
	return ctx.JSON(http.StatusAccepted, echo5api.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s echo5Shop) CreatePayment(ctx *echo.Context) error {
	var in echo5api.NewPayment
	if err := json.NewDecoder(ctx.Request().Body).Decode(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		return ctx.JSON(status, echo5api.Error{Message: msg})
	}
	return ctx.JSON(http.StatusCreated, echo5api.Payment{Id: id, Amount: in.Amount})
}

func (s echo5Shop) UploadFile(ctx *echo.Context) error {
	mr, err := ctx.Request().MultipartReader()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	id, purpose, size, err := s.upload(mr)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	return ctx.JSON(http.StatusCreated, echo5api.File{Id: id, Purpose: purpose, Size: size})
}

// echo5StrictShop is the shop as the echo v5 strict server.
type echo5StrictShop struct{ strictShop }

var _ echo5strictapi.StrictServerInterface = echo5StrictShop{}

func (s echo5StrictShop) ListOrders(ctx context.Context, _ echo5strictapi.ListOrdersRequestObject) (echo5strictapi.ListOrdersResponseObject, error) {
	return s.strictShop.ListOrders(ctx, strictapi.ListOrdersRequestObject{})
}

func (s echo5StrictShop) CreateOrder(ctx context.Context, req echo5strictapi.CreateOrderRequestObject) (echo5strictapi.CreateOrderResponseObject, error) {
	return s.strictShop.CreateOrder(ctx, strictapi.CreateOrderRequestObject{Params: strictapi.CreateOrderParams(req.Params), Body: (*strictapi.NewOrder)(req.Body)})
}

func (s echo5StrictShop) ShipOrder(ctx context.Context, req echo5strictapi.ShipOrderRequestObject) (echo5strictapi.ShipOrderResponseObject, error) {
	return s.strictShop.ShipOrder(ctx, strictapi.ShipOrderRequestObject{OrderId: req.OrderId, Params: strictapi.ShipOrderParams(req.Params)})
}

func (s echo5StrictShop) CreatePayment(ctx context.Context, req echo5strictapi.CreatePaymentRequestObject) (echo5strictapi.CreatePaymentResponseObject, error) {
	return s.strictShop.CreatePayment(ctx, strictapi.CreatePaymentRequestObject{Body: (*strictapi.NewPayment)(req.Body)})
}

func (s echo5StrictShop) UploadFile(ctx context.Context, req echo5strictapi.UploadFileRequestObject) (echo5strictapi.UploadFileResponseObject, error) {
	return s.strictShop.UploadFile(ctx, strictapi.UploadFileRequestObject{Body: req.Body})
}

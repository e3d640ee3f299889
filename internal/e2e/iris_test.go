package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/kataras/iris/v12"
	"github.com/kataras/iris/v12/middleware/recover"

	"github.com/idemgen/idemgen/internal/e2e/irisapi"
	"github.com/idemgen/idemgen/internal/e2e/irisstrictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// irisServers are the iris forms of serversWith.
func irisServers(opts ...idem.Option) []server {
	return []server{
		{"iris plain", func(s *shop, store idemstore.Store) http.Handler {
			app := irisApp()
			irisapi.RegisterHandlers(app, irisapi.WithIdempotency(irisShop{s}, store, opts...))
			return app
		}, false},
		{"iris strict", func(s *shop, store idemstore.Store) http.Handler {
			app := irisApp()
			irisstrictapi.RegisterHandlers(app, irisstrictapi.NewStrictHandlerWithIdempotency(irisStrictShop{s}, nil, store, opts...))
			return app
		}, false},
	}
}

// irisApp is an iris app whose recover middleware answers 500, quietly.
func irisApp() *iris.Application {
	app := iris.New()
	app.Logger().SetLevel("disable")
	app.UseRouter(recover.New())
	return app
}

// irisShop is the shop as an iris ServerInterface. It answers a failure
// with a status and no body, which iris sends only when the request ends:
// the generated decorator must send it to its recorder before storing.
type irisShop struct{ *shop }

var _ irisapi.ServerInterface = irisShop{}

func (s irisShop) ListOrders(ctx iris.Context) { _ = ctx.JSON([]irisapi.Order{}) }

func (s irisShop) CreateOrder(ctx iris.Context, _ irisapi.CreateOrderParams) {
	var in irisapi.NewOrder
	if err := json.NewDecoder(ctx.Request().Body).Decode(&in); err != nil {
		ctx.StatusCode(http.StatusBadRequest)
		_ = ctx.JSON(irisapi.Error{Message: err.Error()})
		return
	}
	o, status := s.create(ctx.Request().Context(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		ctx.StatusCode(status)
		return
	}
	ctx.Header("Location", "/orders/"+o.ID)
	ctx.Header("Set-Cookie", s.cookie())
	ctx.StatusCode(http.StatusCreated)
	_ = ctx.JSON(irisapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s irisShop) ShipOrder(ctx iris.Context, orderID string, _ irisapi.ShipOrderParams) {
	o := s.ship(orderID)
	ctx.StatusCode(http.StatusAccepted)
	_ = ctx.JSON(irisapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s irisShop) CreatePayment(ctx iris.Context) {
	var in irisapi.NewPayment
	if err := json.NewDecoder(ctx.Request().Body).Decode(&in); err != nil {
		ctx.StatusCode(http.StatusBadRequest)
		_ = ctx.JSON(irisapi.Error{Message: err.Error()})
		return
	}
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		ctx.StatusCode(status)
		_ = ctx.JSON(irisapi.Error{Message: msg})
		return
	}
	ctx.StatusCode(http.StatusCreated)
	_ = ctx.JSON(irisapi.Payment{Id: id, Amount: in.Amount})
}

func (s irisShop) UploadFile(ctx iris.Context) {
	mr, err := ctx.Request().MultipartReader()
	if err == nil {
		var id, purpose string
		var size int
		if id, purpose, size, err = s.upload(mr); err == nil {
			ctx.StatusCode(http.StatusCreated)
			_ = ctx.JSON(irisapi.File{Id: id, Purpose: purpose, Size: size})
			return
		}
	}
	ctx.StatusCode(http.StatusBadRequest)
	_ = ctx.JSON(irisapi.Error{Message: err.Error()})
}

// irisStrictShop is the shop as the iris strict server, whose response
// objects answer through iris's context.
type irisStrictShop struct{ *shop }

var _ irisstrictapi.StrictServerInterface = irisStrictShop{}

func (s irisStrictShop) ListOrders(context.Context, irisstrictapi.ListOrdersRequestObject) (irisstrictapi.ListOrdersResponseObject, error) {
	return irisstrictapi.ListOrders200JSONResponse{}, nil
}

func (s irisStrictShop) CreateOrder(ctx context.Context, req irisstrictapi.CreateOrderRequestObject) (irisstrictapi.CreateOrderResponseObject, error) {
	o, status := s.create(ctx, req.Body.Item, req.Body.Quantity)
	if status != http.StatusCreated {
		return irisstrictapi.CreateOrder503Response{}, nil
	}
	return irisstrictapi.CreateOrder201JSONResponse{
		Body:    irisstrictapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"},
		Headers: irisstrictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID), SetCookie: ptr(s.cookie())},
	}, nil
}

func (s irisStrictShop) ShipOrder(_ context.Context, req irisstrictapi.ShipOrderRequestObject) (irisstrictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return irisstrictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s irisStrictShop) CreatePayment(_ context.Context, req irisstrictapi.CreatePaymentRequestObject) (irisstrictapi.CreatePaymentResponseObject, error) {
	switch id, status, msg := s.charge(req.Body.Amount); status {
	case http.StatusPaymentRequired:
		return irisstrictapi.CreatePayment402JSONResponse{Message: msg}, nil
	case http.StatusInternalServerError:
		return irisstrictapi.CreatePayment500JSONResponse{Message: msg}, nil
	default:
		return irisstrictapi.CreatePayment201JSONResponse{Id: id, Amount: req.Body.Amount}, nil
	}
}

func (s irisStrictShop) UploadFile(_ context.Context, req irisstrictapi.UploadFileRequestObject) (irisstrictapi.UploadFileResponseObject, error) {
	id, purpose, size, err := s.upload(req.Body)
	if err != nil {
		return nil, err
	}
	return irisstrictapi.UploadFile201JSONResponse{Id: id, Purpose: purpose, Size: size}, nil
}

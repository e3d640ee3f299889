package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"

	"github.com/idemgen/idemgen/internal/e2e/echoapi"
	"github.com/idemgen/idemgen/internal/e2e/echostrictapi"
	"github.com/idemgen/idemgen/internal/e2e/ginapi"
	"github.com/idemgen/idemgen/internal/e2e/ginstrictapi"
)

func init() { gin.SetMode(gin.ReleaseMode) } // no debug banner per route

// echoShop is the shop as an echo ServerInterface. It answers its failures
// by returning an error, which echo renders after the handler returns: the
// generated decorator must render it before it records.
type echoShop struct{ *shop }

var _ echoapi.ServerInterface = echoShop{}

func (s echoShop) ListOrders(ctx echo.Context) error {
	return ctx.JSON(http.StatusOK, []echoapi.Order{})
}

func (s echoShop) CreateOrder(ctx echo.Context, _ echoapi.CreateOrderParams) error {
	var in echoapi.NewOrder
	if err := json.NewDecoder(ctx.Request().Body).Decode(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	o, status := s.create(ctx.Request().Context(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		return echo.NewHTTPError(status, "try again")
	}
	ctx.Response().Header().Set("Location", "/orders/"+o.ID)
	ctx.Response().Header().Set("Set-Cookie", s.cookie())
	return ctx.JSON(http.StatusCreated, echoapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s echoShop) ShipOrder(ctx echo.Context, orderID string, _ echoapi.ShipOrderParams) error {
	o := s.ship(orderID)
	return ctx.JSON(http.StatusAccepted, echoapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s echoShop) CreatePayment(ctx echo.Context) error {
	var in echoapi.NewPayment
	if err := json.NewDecoder(ctx.Request().Body).Decode(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	return ctx.JSON(http.StatusCreated, echoapi.Payment{Id: s.pay(), Amount: in.Amount})
}

// ginShop is the shop as a gin ServerInterface. It answers a failure with a
// status and no body, which gin sends only when the request ends: the
// generated decorator must send it to its recorder before storing.
type ginShop struct{ *shop }

var _ ginapi.ServerInterface = ginShop{}

func (s ginShop) ListOrders(c *gin.Context) { c.JSON(http.StatusOK, []ginapi.Order{}) }

func (s ginShop) CreateOrder(c *gin.Context, _ ginapi.CreateOrderParams) {
	var in ginapi.NewOrder
	if err := json.NewDecoder(c.Request.Body).Decode(&in); err != nil {
		c.JSON(http.StatusBadRequest, ginapi.Error{Message: err.Error()})
		return
	}
	o, status := s.create(c.Request.Context(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		c.Status(status)
		return
	}
	c.Header("Location", "/orders/"+o.ID)
	c.Header("Set-Cookie", s.cookie())
	c.JSON(http.StatusCreated, ginapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s ginShop) ShipOrder(c *gin.Context, orderID string, _ ginapi.ShipOrderParams) {
	o := s.ship(orderID)
	c.JSON(http.StatusAccepted, ginapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s ginShop) CreatePayment(c *gin.Context) {
	var in ginapi.NewPayment
	if err := json.NewDecoder(c.Request.Body).Decode(&in); err != nil {
		c.JSON(http.StatusBadRequest, ginapi.Error{Message: err.Error()})
		return
	}
	c.JSON(http.StatusCreated, ginapi.Payment{Id: s.pay(), Amount: in.Amount})
}

// echoStrictShop is the shop as echo's strict server.
type echoStrictShop struct{ *shop }

var _ echostrictapi.StrictServerInterface = echoStrictShop{}

func (s echoStrictShop) ListOrders(context.Context, echostrictapi.ListOrdersRequestObject) (echostrictapi.ListOrdersResponseObject, error) {
	return echostrictapi.ListOrders200JSONResponse{}, nil
}

func (s echoStrictShop) CreateOrder(ctx context.Context, req echostrictapi.CreateOrderRequestObject) (echostrictapi.CreateOrderResponseObject, error) {
	o, status := s.create(ctx, req.Body.Item, req.Body.Quantity)
	if status != http.StatusCreated {
		return echostrictapi.CreateOrder503Response{}, nil
	}
	return echostrictapi.CreateOrder201JSONResponse{
		Body:    echostrictapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"},
		Headers: echostrictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID), SetCookie: ptr(s.cookie())},
	}, nil
}

func (s echoStrictShop) ShipOrder(_ context.Context, req echostrictapi.ShipOrderRequestObject) (echostrictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return echostrictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s echoStrictShop) CreatePayment(_ context.Context, req echostrictapi.CreatePaymentRequestObject) (echostrictapi.CreatePaymentResponseObject, error) {
	return echostrictapi.CreatePayment201JSONResponse{Id: s.pay(), Amount: req.Body.Amount}, nil
}

// ginStrictShop is the shop as gin's strict server.
type ginStrictShop struct{ *shop }

var _ ginstrictapi.StrictServerInterface = ginStrictShop{}

func (s ginStrictShop) ListOrders(context.Context, ginstrictapi.ListOrdersRequestObject) (ginstrictapi.ListOrdersResponseObject, error) {
	return ginstrictapi.ListOrders200JSONResponse{}, nil
}

func (s ginStrictShop) CreateOrder(ctx context.Context, req ginstrictapi.CreateOrderRequestObject) (ginstrictapi.CreateOrderResponseObject, error) {
	o, status := s.create(ctx, req.Body.Item, req.Body.Quantity)
	if status != http.StatusCreated {
		return ginstrictapi.CreateOrder503Response{}, nil
	}
	return ginstrictapi.CreateOrder201JSONResponse{
		Body:    ginstrictapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"},
		Headers: ginstrictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID), SetCookie: ptr(s.cookie())},
	}, nil
}

func (s ginStrictShop) ShipOrder(_ context.Context, req ginstrictapi.ShipOrderRequestObject) (ginstrictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return ginstrictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s ginStrictShop) CreatePayment(_ context.Context, req ginstrictapi.CreatePaymentRequestObject) (ginstrictapi.CreatePaymentResponseObject, error) {
	return ginstrictapi.CreatePayment201JSONResponse{Id: s.pay(), Amount: req.Body.Amount}, nil
}

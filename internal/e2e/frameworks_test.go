package e2e_test

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"

	"github.com/idemgen/idemgen/internal/e2e/echoapi"
	"github.com/idemgen/idemgen/internal/e2e/ginapi"
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
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		return ctx.JSON(status, echoapi.Error{Message: msg})
	}
	return ctx.JSON(http.StatusCreated, echoapi.Payment{Id: id, Amount: in.Amount})
}

func (s echoShop) UploadFile(ctx echo.Context) error {
	mr, err := ctx.Request().MultipartReader()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	id, purpose, size, err := s.upload(mr)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	return ctx.JSON(http.StatusCreated, echoapi.File{Id: id, Purpose: purpose, Size: size})
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
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		c.JSON(status, ginapi.Error{Message: msg})
		return
	}
	c.JSON(http.StatusCreated, ginapi.Payment{Id: id, Amount: in.Amount})
}

func (s ginShop) UploadFile(c *gin.Context) {
	mr, err := c.Request.MultipartReader()
	if err != nil {
		c.JSON(http.StatusBadRequest, ginapi.Error{Message: err.Error()})
		return
	}
	id, purpose, size, err := s.upload(mr)
	if err != nil {
		c.JSON(http.StatusBadRequest, ginapi.Error{Message: err.Error()})
		return
	}
	c.JSON(http.StatusCreated, ginapi.File{Id: id, Purpose: purpose, Size: size})
}

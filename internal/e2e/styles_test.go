package e2e_test

import (
	"context"
	"net/http"

	"github.com/idemgen/idemgen/internal/e2e/echostrictapi"
	"github.com/idemgen/idemgen/internal/e2e/ginstrictapi"
	"github.com/idemgen/idemgen/internal/e2e/gorillaapi"
	"github.com/idemgen/idemgen/internal/e2e/gorillastrictapi"
	"github.com/idemgen/idemgen/internal/e2e/plainapi"
	"github.com/idemgen/idemgen/internal/e2e/stdapi"
	"github.com/idemgen/idemgen/internal/e2e/stdstrictapi"
	"github.com/idemgen/idemgen/internal/e2e/strictapi"
)

// The other server styles serve the same shop through plainShop and
// strictShop: each generated package declares its own parameter and body
// types, which convert (their underlying types are the same), and the
// strict response objects of one package satisfy another's response
// interfaces (they have the same method).

// stdShop is the shop as the std plain ServerInterface.
type stdShop struct{ plainShop }

var _ stdapi.ServerInterface = stdShop{}

func (s stdShop) CreateOrder(w http.ResponseWriter, r *http.Request, p stdapi.CreateOrderParams) {
	s.plainShop.CreateOrder(w, r, plainapi.CreateOrderParams(p))
}

func (s stdShop) ShipOrder(w http.ResponseWriter, r *http.Request, orderID string, p stdapi.ShipOrderParams) {
	s.plainShop.ShipOrder(w, r, orderID, plainapi.ShipOrderParams(p))
}

// gorillaShop is the shop as the gorilla plain ServerInterface.
type gorillaShop struct{ plainShop }

var _ gorillaapi.ServerInterface = gorillaShop{}

func (s gorillaShop) CreateOrder(w http.ResponseWriter, r *http.Request, p gorillaapi.CreateOrderParams) {
	s.plainShop.CreateOrder(w, r, plainapi.CreateOrderParams(p))
}

func (s gorillaShop) ShipOrder(w http.ResponseWriter, r *http.Request, orderID string, p gorillaapi.ShipOrderParams) {
	s.plainShop.ShipOrder(w, r, orderID, plainapi.ShipOrderParams(p))
}

// stdStrictShop is the shop as the std strict server.
type stdStrictShop struct{ strictShop }

var _ stdstrictapi.StrictServerInterface = stdStrictShop{}

func (s stdStrictShop) ListOrders(ctx context.Context, _ stdstrictapi.ListOrdersRequestObject) (stdstrictapi.ListOrdersResponseObject, error) {
	return s.strictShop.ListOrders(ctx, strictapi.ListOrdersRequestObject{})
}

func (s stdStrictShop) CreateOrder(ctx context.Context, req stdstrictapi.CreateOrderRequestObject) (stdstrictapi.CreateOrderResponseObject, error) {
	return s.strictShop.CreateOrder(ctx, strictapi.CreateOrderRequestObject{Params: strictapi.CreateOrderParams(req.Params), Body: (*strictapi.NewOrder)(req.Body)})
}

func (s stdStrictShop) ShipOrder(ctx context.Context, req stdstrictapi.ShipOrderRequestObject) (stdstrictapi.ShipOrderResponseObject, error) {
	return s.strictShop.ShipOrder(ctx, strictapi.ShipOrderRequestObject{OrderId: req.OrderId, Params: strictapi.ShipOrderParams(req.Params)})
}

func (s stdStrictShop) CreatePayment(ctx context.Context, req stdstrictapi.CreatePaymentRequestObject) (stdstrictapi.CreatePaymentResponseObject, error) {
	return s.strictShop.CreatePayment(ctx, strictapi.CreatePaymentRequestObject{Body: (*strictapi.NewPayment)(req.Body)})
}

// gorillaStrictShop is the shop as the gorilla strict server.
type gorillaStrictShop struct{ strictShop }

var _ gorillastrictapi.StrictServerInterface = gorillaStrictShop{}

func (s gorillaStrictShop) ListOrders(ctx context.Context, _ gorillastrictapi.ListOrdersRequestObject) (gorillastrictapi.ListOrdersResponseObject, error) {
	return s.strictShop.ListOrders(ctx, strictapi.ListOrdersRequestObject{})
}

func (s gorillaStrictShop) CreateOrder(ctx context.Context, req gorillastrictapi.CreateOrderRequestObject) (gorillastrictapi.CreateOrderResponseObject, error) {
	return s.strictShop.CreateOrder(ctx, strictapi.CreateOrderRequestObject{Params: strictapi.CreateOrderParams(req.Params), Body: (*strictapi.NewOrder)(req.Body)})
}

func (s gorillaStrictShop) ShipOrder(ctx context.Context, req gorillastrictapi.ShipOrderRequestObject) (gorillastrictapi.ShipOrderResponseObject, error) {
	return s.strictShop.ShipOrder(ctx, strictapi.ShipOrderRequestObject{OrderId: req.OrderId, Params: strictapi.ShipOrderParams(req.Params)})
}

func (s gorillaStrictShop) CreatePayment(ctx context.Context, req gorillastrictapi.CreatePaymentRequestObject) (gorillastrictapi.CreatePaymentResponseObject, error) {
	return s.strictShop.CreatePayment(ctx, strictapi.CreatePaymentRequestObject{Body: (*strictapi.NewPayment)(req.Body)})
}

// echoStrictShop is the shop as the echo strict server.
type echoStrictShop struct{ strictShop }

var _ echostrictapi.StrictServerInterface = echoStrictShop{}

func (s echoStrictShop) ListOrders(ctx context.Context, _ echostrictapi.ListOrdersRequestObject) (echostrictapi.ListOrdersResponseObject, error) {
	return s.strictShop.ListOrders(ctx, strictapi.ListOrdersRequestObject{})
}

func (s echoStrictShop) CreateOrder(ctx context.Context, req echostrictapi.CreateOrderRequestObject) (echostrictapi.CreateOrderResponseObject, error) {
	return s.strictShop.CreateOrder(ctx, strictapi.CreateOrderRequestObject{Params: strictapi.CreateOrderParams(req.Params), Body: (*strictapi.NewOrder)(req.Body)})
}

func (s echoStrictShop) ShipOrder(ctx context.Context, req echostrictapi.ShipOrderRequestObject) (echostrictapi.ShipOrderResponseObject, error) {
	return s.strictShop.ShipOrder(ctx, strictapi.ShipOrderRequestObject{OrderId: req.OrderId, Params: strictapi.ShipOrderParams(req.Params)})
}

func (s echoStrictShop) CreatePayment(ctx context.Context, req echostrictapi.CreatePaymentRequestObject) (echostrictapi.CreatePaymentResponseObject, error) {
	return s.strictShop.CreatePayment(ctx, strictapi.CreatePaymentRequestObject{Body: (*strictapi.NewPayment)(req.Body)})
}

// ginStrictShop is the shop as the gin strict server.
type ginStrictShop struct{ strictShop }

var _ ginstrictapi.StrictServerInterface = ginStrictShop{}

func (s ginStrictShop) ListOrders(ctx context.Context, _ ginstrictapi.ListOrdersRequestObject) (ginstrictapi.ListOrdersResponseObject, error) {
	return s.strictShop.ListOrders(ctx, strictapi.ListOrdersRequestObject{})
}

func (s ginStrictShop) CreateOrder(ctx context.Context, req ginstrictapi.CreateOrderRequestObject) (ginstrictapi.CreateOrderResponseObject, error) {
	return s.strictShop.CreateOrder(ctx, strictapi.CreateOrderRequestObject{Params: strictapi.CreateOrderParams(req.Params), Body: (*strictapi.NewOrder)(req.Body)})
}

func (s ginStrictShop) ShipOrder(ctx context.Context, req ginstrictapi.ShipOrderRequestObject) (ginstrictapi.ShipOrderResponseObject, error) {
	return s.strictShop.ShipOrder(ctx, strictapi.ShipOrderRequestObject{OrderId: req.OrderId, Params: strictapi.ShipOrderParams(req.Params)})
}

func (s ginStrictShop) CreatePayment(ctx context.Context, req ginstrictapi.CreatePaymentRequestObject) (ginstrictapi.CreatePaymentResponseObject, error) {
	return s.strictShop.CreatePayment(ctx, strictapi.CreatePaymentRequestObject{Body: (*strictapi.NewPayment)(req.Body)})
}

func (s stdStrictShop) UploadFile(ctx context.Context, req stdstrictapi.UploadFileRequestObject) (stdstrictapi.UploadFileResponseObject, error) {
	return s.strictShop.UploadFile(ctx, strictapi.UploadFileRequestObject{Body: req.Body})
}

func (s gorillaStrictShop) UploadFile(ctx context.Context, req gorillastrictapi.UploadFileRequestObject) (gorillastrictapi.UploadFileResponseObject, error) {
	return s.strictShop.UploadFile(ctx, strictapi.UploadFileRequestObject{Body: req.Body})
}

func (s echoStrictShop) UploadFile(ctx context.Context, req echostrictapi.UploadFileRequestObject) (echostrictapi.UploadFileResponseObject, error) {
	return s.strictShop.UploadFile(ctx, strictapi.UploadFileRequestObject{Body: req.Body})
}

func (s ginStrictShop) UploadFile(ctx context.Context, req ginstrictapi.UploadFileRequestObject) (ginstrictapi.UploadFileResponseObject, error) {
	return s.strictShop.UploadFile(ctx, strictapi.UploadFileRequestObject{Body: req.Body})
}

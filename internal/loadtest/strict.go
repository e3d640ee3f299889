package loadtest

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/idemgen/idemgen/internal/loadtest/strictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// strictServer serves the handler's work (count the run under its key,
// answer 201 with body) as a typed strict handler behind oapi-codegen's
// generated chi router and strict handler, built by idemgen's
// NewStrictHandlerWithIdempotency: the wiring README recommends, with the
// typed body decoded by oapi-codegen.
func strictServer(store idemstore.Store) func(body []byte, runs *runCounter) http.Handler {
	return func(body []byte, runs *runCounter) http.Handler {
		si := strictapi.NewStrictHandlerWithIdempotency(strictOrders{body: body, runs: runs}, nil, store)
		return strictapi.HandlerWithOptions(si, strictapi.ChiServerOptions{
			BaseRouter: chi.NewRouter(), ErrorHandlerFunc: strictapi.IdempotencyErrorHandler})
	}
}

// strictOrders is the strict handler of the harness's operation.
type strictOrders struct {
	body []byte
	runs *runCounter
}

// CreateOrder counts its run under the request's key and answers body.
func (s strictOrders) CreateOrder(ctx context.Context, _ strictapi.CreateOrderRequestObject) (strictapi.CreateOrderResponseObject, error) {
	info, _ := idem.FromContext(ctx)
	s.runs.add(info.Key)
	return rawCreated(s.body), nil
}

// rawCreated is a 201 JSON answer of fixed bytes.
type rawCreated []byte

// VisitCreateOrderResponse writes the answer.
func (b rawCreated) VisitCreateOrderResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusCreated)
	_, err := w.Write(b)
	return err
}

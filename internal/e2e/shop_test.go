package e2e_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/idemgen/idemgen/internal/e2e/plainapi"
	"github.com/idemgen/idemgen/internal/e2e/strictapi"
	"github.com/idemgen/idemgen/internal/redistest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package has none (go generate rewrites its files).
var _ = flag.Bool("update", false, "unused here: the generated files of this package are rewritten by go generate")

// shop is the business logic behind both generated servers. It counts what
// really ran, which is what the tests assert on.
type shop struct {
	created, shipped, paid atomic.Int64  // executions that did the work
	uploaded               atomic.Int64  // uploadFile executions
	createCalls            atomic.Int64  // createOrder executions, including refused ones
	failFirst              atomic.Int64  // createOrder answers 503 while positive (and decrements)
	entered                chan struct{} // when set, createOrder signals here, then waits for gate
	gate                   chan struct{}
}

type order struct {
	ID, Item string
	Quantity int
}

// create places an order, or answers 503 while failFirst is positive.
func (s *shop) create(ctx context.Context, item string, qty int) (order, int) {
	s.createCalls.Add(1)
	if s.entered != nil {
		s.entered <- struct{}{}
		select {
		case <-s.gate:
		case <-ctx.Done():
			return order{}, http.StatusServiceUnavailable
		}
	}
	if s.failFirst.Add(-1) >= 0 {
		return order{}, http.StatusServiceUnavailable
	}
	n := s.created.Add(1)
	return order{ID: "ord-" + strconv.FormatInt(n, 10), Item: item, Quantity: qty}, http.StatusCreated
}

func (s *shop) ship(id string) order {
	s.shipped.Add(1)
	return order{ID: id, Item: "parcel", Quantity: 1}
}

func (s *shop) pay() string { return "pay-" + strconv.FormatInt(s.paid.Add(1), 10) }

// upload stores a file from a multipart body (parts file and purpose).
func (s *shop) upload(mr *multipart.Reader) (id, purpose string, size int, err error) {
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", 0, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return "", "", 0, err
		}
		switch p.FormName() {
		case "file":
			size = len(b)
		case "purpose":
			purpose = string(b)
		}
	}
	return "file-" + strconv.FormatInt(s.uploaded.Add(1), 10), purpose, size, nil
}

// strictShop is the shop as a strict server.
type strictShop struct{ *shop }

var _ strictapi.StrictServerInterface = strictShop{}

func (s strictShop) ListOrders(context.Context, strictapi.ListOrdersRequestObject) (strictapi.ListOrdersResponseObject, error) {
	return strictapi.ListOrders200JSONResponse{}, nil
}

func (s strictShop) CreateOrder(ctx context.Context, req strictapi.CreateOrderRequestObject) (strictapi.CreateOrderResponseObject, error) {
	o, status := s.create(ctx, req.Body.Item, req.Body.Quantity)
	if status != http.StatusCreated {
		return strictapi.CreateOrder503Response{}, nil
	}
	return strictapi.CreateOrder201JSONResponse{
		Body:    strictapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"},
		Headers: strictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID)},
	}, nil
}

func (s strictShop) ShipOrder(_ context.Context, req strictapi.ShipOrderRequestObject) (strictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return strictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s strictShop) CreatePayment(_ context.Context, req strictapi.CreatePaymentRequestObject) (strictapi.CreatePaymentResponseObject, error) {
	return strictapi.CreatePayment201JSONResponse{Id: s.pay(), Amount: req.Body.Amount}, nil
}

func (s strictShop) UploadFile(_ context.Context, req strictapi.UploadFileRequestObject) (strictapi.UploadFileResponseObject, error) {
	id, purpose, size, err := s.upload(req.Body)
	if err != nil {
		return nil, err
	}
	return strictapi.UploadFile201JSONResponse{Id: id, Purpose: purpose, Size: size}, nil
}

// plainShop is the shop as a plain ServerInterface.
type plainShop struct{ *shop }

var _ plainapi.ServerInterface = plainShop{}

func (s plainShop) ListOrders(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []plainapi.Order{})
}

func (s plainShop) CreateOrder(w http.ResponseWriter, r *http.Request, _ plainapi.CreateOrderParams) {
	var in plainapi.NewOrder
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, plainapi.Error{Message: err.Error()})
		return
	}
	o, status := s.create(r.Context(), in.Item, in.Quantity)
	if status != http.StatusCreated {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Location", "/orders/"+o.ID)
	writeJSON(w, http.StatusCreated, plainapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "placed"})
}

func (s plainShop) ShipOrder(w http.ResponseWriter, _ *http.Request, orderID string, _ plainapi.ShipOrderParams) {
	o := s.ship(orderID)
	writeJSON(w, http.StatusAccepted, plainapi.Order{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"})
}

func (s plainShop) CreatePayment(w http.ResponseWriter, r *http.Request) {
	var in plainapi.NewPayment
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, plainapi.Error{Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusCreated, plainapi.Payment{Id: s.pay(), Amount: in.Amount})
}

func (s plainShop) UploadFile(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, plainapi.Error{Message: err.Error()})
		return
	}
	id, purpose, size, err := s.upload(mr)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, plainapi.Error{Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusCreated, plainapi.File{Id: id, Purpose: purpose, Size: size})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client hung up: nothing to do
}

// server is one of the generated servers over a shop and a store.
type server struct {
	name    string
	handler func(s *shop, store idem.Store, opts ...idem.Option) http.Handler
}

func servers() []server { return serversWith(scoped()...) }

// scoped are the options of a real API over the spec's apiKey scheme: one
// key space per API key, stored as a keyed hash.
func scoped() []idem.Option {
	return []idem.Option{idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret([]byte("e2e scope secret, 32 bytes long!"))}
}

// serversWith are the generated servers with the engine options opts.
func serversWith(opts ...idem.Option) []server {
	return []server{
		{"strict", func(s *shop, store idem.Store, more ...idem.Option) http.Handler {
			si := strictapi.NewStrictHandlerWithIdempotency(strictShop{s}, nil, store, append(slices.Clone(opts), more...)...)
			return strictapi.HandlerWithOptions(si, strictapi.ChiServerOptions{
				BaseRouter: chi.NewRouter(), ErrorHandlerFunc: strictapi.IdempotencyErrorHandler})
		}},
		{"plain", func(s *shop, store idem.Store, more ...idem.Option) http.Handler {
			return plainapi.HandlerWithOptions(plainapi.WithIdempotency(plainShop{s}, store, append(slices.Clone(opts), more...)...), plainapi.ChiServerOptions{
				BaseRouter: chi.NewRouter(), ErrorHandlerFunc: plainapi.IdempotencyErrorHandler})
		}},
	}
}

// backend is a Redis for the store: the real server or miniredis.
type backend struct {
	name  string
	store func(t *testing.T) idem.Store
}

func backends() []backend {
	return []backend{
		{"miniredis", func(t *testing.T) idem.Store {
			_, rdb := redistest.LiveMini(t)
			return redisstore.New(rdb)
		}},
		{"redis", func(t *testing.T) idem.Store {
			return redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
		}},
	}
}

func ptr[T any](v T) *T { return &v }

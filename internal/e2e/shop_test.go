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

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gorilla/mux"
	"github.com/labstack/echo/v4"

	"github.com/idemgen/idemgen/internal/e2e/echoapi"
	"github.com/idemgen/idemgen/internal/e2e/echostrictapi"
	"github.com/idemgen/idemgen/internal/e2e/ginapi"
	"github.com/idemgen/idemgen/internal/e2e/ginstrictapi"
	"github.com/idemgen/idemgen/internal/e2e/gorillaapi"
	"github.com/idemgen/idemgen/internal/e2e/gorillastrictapi"
	"github.com/idemgen/idemgen/internal/e2e/plainapi"
	"github.com/idemgen/idemgen/internal/e2e/stdapi"
	"github.com/idemgen/idemgen/internal/e2e/stdstrictapi"
	"github.com/idemgen/idemgen/internal/e2e/strictapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// CI passes -update to every package under internal/ when it rewrites
// golden files; this package has none (go generate rewrites its files).
var _ = flag.Bool("update", false, "unused here: the generated files of this package are rewritten by go generate")

// shop is the business logic behind both generated servers. It counts what
// really ran, which is what the tests assert on.
type shop struct {
	created, shipped, paid atomic.Int64  // executions that did the work
	charges                atomic.Int64  // createPayment executions, including declined and failed ones
	uploaded               atomic.Int64  // uploadFile executions
	createCalls            atomic.Int64  // createOrder executions, including refused ones
	failFirst              atomic.Int64  // createOrder answers 503 while positive (and decrements)
	panicFirst             atomic.Int64  // createOrder panics while positive (and decrements)
	seen                   atomic.Value  // the idem.Info of createOrder's last run (nil when it had none)
	entered                chan struct{} // when set, createOrder signals here, then waits for gate
	gate                   chan struct{}
	routerProblems         bool // the server answers its router's 400s as problems (server.routerProblems)

	// store is the store under the server, which a test can make fail.
	store *failingStore
	// orders, when set, is where createOrder also writes its order, in the
	// run's transaction (the postgres and mariadb backends, postgres_test.go
	// and mysql_test.go).
	orders orderTable
}

type order struct {
	ID, Item string
	Quantity int
}

// create places an order, or answers 503 while failFirst is positive.
func (s *shop) create(ctx context.Context, item string, qty int) (order, int) {
	s.createCalls.Add(1)
	if info, ok := idem.FromContext(ctx); ok {
		s.seen.Store(info)
	}
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
	if s.panicFirst.Add(-1) >= 0 {
		panic("createOrder: test panic")
	}
	n := s.created.Add(1)
	o := order{ID: "ord-" + strconv.FormatInt(n, 10), Item: item, Quantity: qty}
	if s.orders != nil {
		if err := s.orders.insert(ctx, o); err != nil {
			s.created.Add(-1)
			return order{}, http.StatusInternalServerError
		}
	}
	return o, http.StatusCreated
}

// cookie is the session cookie a created order answers with; a replay
// never carries it.
func (s *shop) cookie() string { return "session=s" + strconv.FormatInt(s.created.Load(), 10) }

func (s *shop) ship(id string) order {
	s.shipped.Add(1)
	return order{ID: id, Item: "parcel", Quantity: 1}
}

func (s *shop) pay() string { return "pay-" + strconv.FormatInt(s.paid.Add(1), 10) }

// charge runs createPayment: an amount of 402 is declined and one of 500
// fails (the storage policy of createPayment stores the 500, not the 402),
// each with a message naming the run; other amounts are paid (status 201).
func (s *shop) charge(amount int) (id string, status int, msg string) {
	n := strconv.FormatInt(s.charges.Add(1), 10)
	switch amount {
	case http.StatusPaymentRequired:
		return "", amount, "declined, run " + n
	case http.StatusInternalServerError:
		return "", amount, "failed, run " + n
	}
	return s.pay(), http.StatusCreated, ""
}

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
		Headers: strictapi.CreateOrder201ResponseHeaders{Location: ptr("/orders/" + o.ID), SetCookie: ptr(s.cookie())},
	}, nil
}

func (s strictShop) ShipOrder(_ context.Context, req strictapi.ShipOrderRequestObject) (strictapi.ShipOrderResponseObject, error) {
	o := s.ship(req.OrderId)
	return strictapi.ShipOrder202JSONResponse{Id: o.ID, Item: o.Item, Quantity: o.Quantity, Status: "shipping"}, nil
}

func (s strictShop) CreatePayment(_ context.Context, req strictapi.CreatePaymentRequestObject) (strictapi.CreatePaymentResponseObject, error) {
	switch id, status, msg := s.charge(req.Body.Amount); status {
	case http.StatusPaymentRequired:
		return strictapi.CreatePayment402JSONResponse{Message: msg}, nil
	case http.StatusInternalServerError:
		return strictapi.CreatePayment500JSONResponse{Message: msg}, nil
	default:
		return strictapi.CreatePayment201JSONResponse{Id: id, Amount: req.Body.Amount}, nil
	}
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
	w.Header().Set("Set-Cookie", s.cookie())
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
	id, status, msg := s.charge(in.Amount)
	if status != http.StatusCreated {
		writeJSON(w, status, plainapi.Error{Message: msg})
		return
	}
	writeJSON(w, http.StatusCreated, plainapi.Payment{Id: id, Amount: in.Amount})
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
	handler func(s *shop, store idemstore.Store) http.Handler
	// routerProblems: the router's own 400s (a required key header
	// parameter missing) are problem documents, through the generated
	// IdempotencyErrorHandler; echo and gin have none yet and answer in
	// their own format.
	routerProblems bool
}

func servers() []server { return serversWith(scoped()...) }

// scoped are the options of a real API over the spec's apiKey scheme: one
// key space per API key, stored as a keyed hash.
func scoped() []idem.Option {
	return []idem.Option{idem.WithScopeFromHeader("X-API-Key"), idem.WithScopeSecret([]byte("e2e scope secret, 32 bytes long!"))}
}

// serversWith are the generated servers with the engine options opts, each
// behind its framework's way of turning a panic into a 500, and behind
// oneCaller: the spec requires an API key, which the requests of most
// scenarios leave out.
func serversWith(opts ...idem.Option) []server {
	srvs := bareServersWith(opts...)
	for i, srv := range srvs {
		srvs[i].handler = func(s *shop, store idemstore.Store) http.Handler { return oneCaller(srv.handler(s, store)) }
	}
	return srvs
}

// oneCaller sends the API key of one caller with every request that has
// none.
func oneCaller(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["X-Api-Key"]; !ok {
			r.Header.Set("X-API-Key", "sk_e2e_caller")
		}
		h.ServeHTTP(w, r)
	})
}

// bareServersWith are serversWith without oneCaller.
func bareServersWith(opts ...idem.Option) []server {
	return slices.Concat(netHTTPAndEchoGinServers(opts...), echo5Servers(opts...), fiberServers(opts...), fiber3Servers(opts...), irisServers(opts...))
}

// netHTTPAndEchoGinServers are the net/http, echo and gin forms of
// bareServersWith.
func netHTTPAndEchoGinServers(opts ...idem.Option) []server {
	return []server{
		{"chi strict", func(s *shop, store idemstore.Store) http.Handler {
			si := strictapi.NewStrictHandlerWithIdempotency(strictShop{s}, nil, store, opts...)
			return recoverer(strictapi.HandlerWithOptions(si, strictapi.ChiServerOptions{
				BaseRouter: chi.NewRouter(), ErrorHandlerFunc: strictapi.IdempotencyErrorHandler}))
		}, true},
		{"chi plain", func(s *shop, store idemstore.Store) http.Handler {
			return recoverer(plainapi.HandlerWithOptions(plainapi.WithIdempotency(plainShop{s}, store, opts...), plainapi.ChiServerOptions{
				BaseRouter: chi.NewRouter(), ErrorHandlerFunc: plainapi.IdempotencyErrorHandler}))
		}, true},
		{"std-http strict", func(s *shop, store idemstore.Store) http.Handler {
			si := stdstrictapi.NewStrictHandlerWithIdempotency(stdStrictShop{strictShop{s}}, nil, store, opts...)
			return recoverer(stdstrictapi.HandlerWithOptions(si, stdstrictapi.StdHTTPServerOptions{
				BaseRouter: http.NewServeMux(), ErrorHandlerFunc: stdstrictapi.IdempotencyErrorHandler}))
		}, true},
		{"std-http plain", func(s *shop, store idemstore.Store) http.Handler {
			return recoverer(stdapi.HandlerWithOptions(stdapi.WithIdempotency(stdShop{plainShop{s}}, store, opts...), stdapi.StdHTTPServerOptions{
				BaseRouter: http.NewServeMux(), ErrorHandlerFunc: stdapi.IdempotencyErrorHandler}))
		}, true},
		{"gorilla strict", func(s *shop, store idemstore.Store) http.Handler {
			si := gorillastrictapi.NewStrictHandlerWithIdempotency(gorillaStrictShop{strictShop{s}}, nil, store, opts...)
			return recoverer(gorillastrictapi.HandlerWithOptions(si, gorillastrictapi.GorillaServerOptions{
				BaseRouter: mux.NewRouter(), ErrorHandlerFunc: gorillastrictapi.IdempotencyErrorHandler}))
		}, true},
		{"gorilla plain", func(s *shop, store idemstore.Store) http.Handler {
			return recoverer(gorillaapi.HandlerWithOptions(gorillaapi.WithIdempotency(gorillaShop{plainShop{s}}, store, opts...), gorillaapi.GorillaServerOptions{
				BaseRouter: mux.NewRouter(), ErrorHandlerFunc: gorillaapi.IdempotencyErrorHandler}))
		}, true},
		{"echo plain", func(s *shop, store idemstore.Store) http.Handler {
			e := echo.New()
			e.Use(echoRecover)
			echoapi.RegisterHandlers(e, echoapi.WithIdempotency(echoShop{s}, store, opts...))
			return e
		}, false},
		{"echo strict", func(s *shop, store idemstore.Store) http.Handler {
			e := echo.New()
			e.Use(echoRecover)
			echostrictapi.RegisterHandlers(e, echostrictapi.NewStrictHandlerWithIdempotency(echoStrictShop{strictShop{s}}, nil, store, opts...))
			return e
		}, false},
		{"gin plain", func(s *shop, store idemstore.Store) http.Handler {
			r := ginRouter()
			ginapi.RegisterHandlers(r, ginapi.WithIdempotency(ginShop{s}, store, opts...))
			return r
		}, false},
		{"gin strict", func(s *shop, store idemstore.Store) http.Handler {
			// gin's strict server hands the typed handler the *gin.Context
			// as its context.Context, which reaches the request's context
			// only with ContextWithFallback. Left unset here: idem.FromContext
			// and the stores' Tx must reach the handler without it.
			r := ginRouter()
			ginstrictapi.RegisterHandlers(r, ginstrictapi.NewStrictHandlerWithIdempotency(ginStrictShop{strictShop{s}}, nil, store, opts...))
			return r
		}, false},
	}
}

// ginRouter is a gin engine whose recovery answers 500, quietly.
func ginRouter() *gin.Engine {
	r := gin.New()
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, _ any) { c.AbortWithStatus(http.StatusInternalServerError) }))
	return r
}

// echoRecover answers 500 for a handler that panics, as echo's Recover
// middleware does, through c's response: the decorator must have restored
// it, uncommitted.
func echoRecover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = echo.NewHTTPError(http.StatusInternalServerError)
			}
		}()
		return next(c)
	}
}

// recoverer answers 500 for a handler that panics, as a net/http router's
// recovery middleware does.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// backend is a store: on the real Redis, miniredis, PostgreSQL or MariaDB.
type backend struct {
	name  string
	store func(t *testing.T) idemstore.Store
	// orders, for a transactional store, makes the business table its
	// runs write to (nil: none).
	orders func(t *testing.T) orderTable
}

func backends() []backend {
	return []backend{
		{name: "miniredis", store: func(t *testing.T) idemstore.Store {
			_, rdb := embedredis.StartTB(t)
			return redisstore.New(rdb)
		}},
		{name: "redis", store: func(t *testing.T) idemstore.Store {
			return redisstore.New(redistest.Real(t), redisstore.WithPrefix(redistest.Prefix(t)))
		}},
		postgresBackend(),
		mariadbBackend(),
	}
}

func ptr[T any](v T) *T { return &v }

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	fiber2 "github.com/gofiber/fiber/v2"
	fiber3 "github.com/gofiber/fiber/v3"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemfiber"
	"github.com/idemgen/idemgen/runtime/idemfiber3"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// brewOp is the operation of the fiber adapter scenarios.
var brewOp = idemop.Operation{ID: "Brew", Method: "POST", Path: "/brew"}

// brewer is what a scenario's handler does through the fiber context it
// runs in, whichever fiber that is.
type brewer interface {
	Context() context.Context // the handler's context, with idem.FromContext's Info
	Set(name, value string)   // a response header
	Send(status int, body string) error
}

// brew is a scenario's handler.
type brew func(b brewer) error

// brewOptions are what a scenario asks of the app around the handler.
type brewOptions struct {
	rendered  *atomic.Int64                    // non-nil: the app's ErrorHandler renders an error as 418 "teapot: <error>" and counts it here
	recovered func(cookie, body []byte)        // non-nil: a middleware around the route recovers a panic, reports what the response then holds, and answers 500
	opts      []idem.Option                    // the engine's
	store     func(*testing.T) idemstore.Store // nil: miniredis
}

// fiberStyle is one fiber major version and its adapter: app serves POST
// /brew with handler under the adapter's Serve, on engine, and returns
// the app's in-memory round trip (app.Test).
type fiberStyle struct {
	name string
	app  func(engine *idem.Engine, handler brew, o brewOptions) func(*http.Request) (*http.Response, error)
}

var fiberStyles = []fiberStyle{
	{"fiber v2", fiber2Brew},
	{"fiber v3", fiber3Brew},
}

// TestFiberAdapters: the fiber adapters (idemfiber, idemfiber3), which run
// the engine's flow through Engine.ServeRequest without net/http, keep
// fiber's ways: one scenario table, run on each.
func TestFiberAdapters(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, st fiberStyle)
	}{
		{"a returned error is stored as the ErrorHandler renders it, rendered once", func(t *testing.T, st fiberStyle) {
			var rendered, runs atomic.Int64
			app := newBrewApp(t, st, func(brewer) error {
				runs.Add(1)
				return errors.New("no coffee")
			}, brewOptions{rendered: &rendered})
			for i, replayed := range []string{"", "true"} {
				a := postBrew(t, app)
				if a.status != http.StatusTeapot || a.body != "teapot: no coffee" || a.header.Get(idemop.HeaderReplayed) != replayed {
					t.Errorf("answer %d: %d %q, replayed %q; want 418 %q, replayed %q", i+1, a.status, a.body, a.header.Get(idemop.HeaderReplayed), "teapot: no coffee", replayed)
				}
			}
			if runs.Load() != 1 || rendered.Load() != 1 {
				t.Errorf("handler ran %d times, error rendered %d times; want 1 and 1", runs.Load(), rendered.Load())
			}
		}},
		{"a panic reaches the middleware with none of the handler's writes, and releases the key", func(t *testing.T, st fiberStyle) {
			var runs atomic.Int64
			app := newBrewApp(t, st, func(b brewer) error {
				if runs.Add(1) == 1 {
					b.Set("Set-Cookie", "half=written")
					_ = b.Send(http.StatusOK, "half")
					panic("boom")
				}
				return b.Send(http.StatusCreated, "")
			}, brewOptions{recovered: func(cookie, body []byte) {
				if len(cookie) > 0 || len(body) > 0 {
					t.Errorf("after the panic the response holds Set-Cookie %q, body %q", cookie, body)
				}
			}})
			if a := postBrew(t, app); a.status != http.StatusInternalServerError {
				t.Fatalf("first answer %d, want 500", a.status)
			}
			if a := postBrew(t, app); a.status != http.StatusCreated || runs.Load() != 2 {
				t.Fatalf("retry answered %d after %d runs, want 201 after 2", a.status, runs.Load())
			}
		}},
		{"fail-open with the store down answers unprotected, marked degraded", func(t *testing.T, st fiberStyle) {
			app := newBrewApp(t, st, func(b brewer) error { return b.Send(http.StatusCreated, "brewed") }, brewOptions{
				opts:  []idem.Option{idem.WithFailOpen(true)},
				store: func(*testing.T) idemstore.Store { return downStore{} },
			})
			a := postBrew(t, app)
			if a.status != http.StatusCreated || a.body != "brewed" || a.header.Get(idemop.HeaderDegraded) != "true" {
				t.Errorf("answer %d %q, degraded %q; want 201 brewed, degraded true", a.status, a.body, a.header.Get(idemop.HeaderDegraded))
			}
		}},
		{"a scope function gets the request as net/http sees it, the handler its key", func(t *testing.T, st fiberStyle) {
			var runs atomic.Int64
			app := newBrewApp(t, st, func(b brewer) error {
				runs.Add(1)
				info, _ := idem.FromContext(b.Context())
				return b.Send(http.StatusCreated, info.Key)
			}, brewOptions{opts: []idem.Option{idem.WithScope(func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil })}})
			for _, tenant := range []string{"a", "b", "a"} {
				if a := postBrew(t, app, "X-Tenant", tenant); a.status != http.StatusCreated || a.body != "k1" {
					t.Errorf("tenant %s: %d %q, want 201 k1", tenant, a.status, a.body)
				}
			}
			if runs.Load() != 2 {
				t.Errorf("handler ran %d times, want 2 (one per tenant)", runs.Load())
			}
		}},
		{"the engine's problems reach the client as RFC 9457 documents, a 409 with Retry-After", func(t *testing.T, st fiberStyle) {
			entered, gate := make(chan struct{}), make(chan struct{})
			app := newBrewApp(t, st, func(b brewer) error {
				entered <- struct{}{}
				<-gate
				return b.Send(http.StatusCreated, "")
			}, brewOptions{})
			done := make(chan brewAnswer)
			go func() { done <- postBrew(t, app) }()
			<-entered
			conflict := postBrew(t, app)
			close(gate)
			if first := <-done; first.status != http.StatusCreated {
				t.Errorf("first answer %d, want 201", first.status)
			}
			missing := postBrew(t, app, "Idempotency-Key", "")
			for _, c := range []struct {
				a      brewAnswer
				status int
			}{{conflict, http.StatusConflict}, {missing, http.StatusBadRequest}} {
				if c.a.status != c.status || c.a.header.Get("Content-Type") != "application/problem+json" || c.a.header.Get("Cache-Control") != "no-store" {
					t.Errorf("answer %d (want %d), Content-Type %q, Cache-Control %q", c.a.status, c.status, c.a.header.Get("Content-Type"), c.a.header.Get("Cache-Control"))
				}
			}
			if conflict.header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After")
			}
		}},
	}
	for _, st := range fiberStyles {
		t.Run(st.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, st) })
			}
		})
	}
}

// newBrewApp is st's app over an engine on o's store (miniredis unless
// set) with o's options.
func newBrewApp(t *testing.T, st fiberStyle, handler brew, o brewOptions) func(*http.Request) (*http.Response, error) {
	var store idemstore.Store
	if o.store != nil {
		store = o.store(t)
	} else {
		_, rdb := redistest.Mini(t)
		store = redisstore.New(rdb)
	}
	return st.app(idem.NewEngine(store, o.opts...), handler, o)
}

// brewAnswer is what a client sees of a response.
type brewAnswer struct {
	status int
	header http.Header
	body   string
}

// postBrew posts an order for coffee with key k1 to app; header pairs are
// set after (a value "" deletes the header).
func postBrew(t *testing.T, app func(*http.Request) (*http.Response, error), header ...string) brewAnswer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/brew", strings.NewReader(`{"beans":"arabica"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := app(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return brewAnswer{res.StatusCode, res.Header, string(b)}
}

// downStore is a store that is down.
type downStore struct{ idemstore.Store }

func (downStore) Acquire(context.Context, idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	return idemstore.Acquisition{}, fmt.Errorf("%w: down", idemstore.ErrStoreUnavailable)
}

// fiber2Brewer is a brewer on a fiber v2 context.
type fiber2Brewer struct{ c *fiber2.Ctx }

func (b fiber2Brewer) Context() context.Context { return b.c.UserContext() }
func (b fiber2Brewer) Set(name, value string)   { b.c.Set(name, value) }
func (b fiber2Brewer) Send(status int, body string) error {
	if body == "" {
		return b.c.SendStatus(status)
	}
	return b.c.Status(status).SendString(body)
}

func fiber2Brew(engine *idem.Engine, handler brew, o brewOptions) func(*http.Request) (*http.Response, error) {
	var cfg fiber2.Config
	if o.rendered != nil {
		cfg.ErrorHandler = func(c *fiber2.Ctx, err error) error {
			o.rendered.Add(1)
			return c.Status(http.StatusTeapot).SendString("teapot: " + err.Error())
		}
	}
	app := fiber2.New(cfg)
	if o.recovered != nil {
		app.Use(func(c *fiber2.Ctx) (err error) {
			defer func() {
				if recover() != nil {
					o.recovered(c.Response().Header.Peek("Set-Cookie"), c.Response().Body())
					err = c.SendStatus(http.StatusInternalServerError)
				}
			}()
			return c.Next()
		})
	}
	app.Post("/brew", func(c *fiber2.Ctx) error {
		return idemfiber.Serve(engine, c, &brewOp, func(c *fiber2.Ctx) error { return handler(fiber2Brewer{c}) })
	})
	return func(r *http.Request) (*http.Response, error) { return app.Test(r, -1) }
}

// fiber3Brewer is a brewer on a fiber v3 context.
type fiber3Brewer struct{ c fiber3.Ctx }

func (b fiber3Brewer) Context() context.Context { return b.c.Context() }
func (b fiber3Brewer) Set(name, value string)   { b.c.Set(name, value) }
func (b fiber3Brewer) Send(status int, body string) error {
	if body == "" {
		return b.c.SendStatus(status)
	}
	return b.c.Status(status).SendString(body)
}

func fiber3Brew(engine *idem.Engine, handler brew, o brewOptions) func(*http.Request) (*http.Response, error) {
	var cfg fiber3.Config
	if o.rendered != nil {
		cfg.ErrorHandler = func(c fiber3.Ctx, err error) error {
			o.rendered.Add(1)
			return c.Status(http.StatusTeapot).SendString("teapot: " + err.Error())
		}
	}
	app := fiber3.New(cfg)
	if o.recovered != nil {
		app.Use(func(c fiber3.Ctx) (err error) {
			defer func() {
				if recover() != nil {
					o.recovered(c.Response().Header.Peek("Set-Cookie"), c.Response().Body())
					err = c.SendStatus(http.StatusInternalServerError)
				}
			}()
			return c.Next()
		})
	}
	app.Post("/brew", func(c fiber3.Ctx) error {
		return idemfiber3.Serve(engine, c, &brewOp, func(c fiber3.Ctx) error { return handler(fiber3Brewer{c}) })
	})
	return func(r *http.Request) (*http.Response, error) { return app.Test(r, fiber3.TestConfig{}) }
}

package idemfiber3_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/idemgen/idemgen/internal/redistest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemfiber3"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

var op = idem.Operation{ID: "Brew", Method: "POST", Path: "/brew"}

func newEngine(t *testing.T, opts ...idem.Option) *idem.Engine {
	_, rdb := redistest.Mini(t)
	return idem.NewEngine(redisstore.New(rdb), opts...)
}

// answer is what a client sees of a response.
type answer struct {
	status int
	header http.Header
	body   string
}

func post(t *testing.T, app *fiber.App, header ...string) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/brew", strings.NewReader(`{"beans":"arabica"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := app.Test(req, fiber.TestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(b)}
}

// TestServeStoresTheRenderedError: an error the handler returns is what
// the app's ErrorHandler makes of it, on the first answer and on its
// replay; fiber renders nothing more.
func TestServeStoresTheRenderedError(t *testing.T) {
	engine := newEngine(t)
	rendered := 0
	app := fiber.New(fiber.Config{ErrorHandler: func(c fiber.Ctx, err error) error {
		rendered++
		return c.Status(http.StatusTeapot).SendString("teapot: " + err.Error())
	}})
	runs := 0
	app.Post("/brew", func(c fiber.Ctx) error {
		return idemfiber3.Serve(engine, c, &op, func(c fiber.Ctx) error {
			runs++
			return errors.New("no coffee")
		})
	})
	for i, replayed := range []string{"", "true"} {
		a := post(t, app)
		if a.status != http.StatusTeapot || a.body != "teapot: no coffee" || a.header.Get(idem.HeaderReplayed) != replayed {
			t.Errorf("answer %d: %d %q, replayed %q; want 418 %q, replayed %q", i+1, a.status, a.body, a.header.Get(idem.HeaderReplayed), "teapot: no coffee", replayed)
		}
	}
	if runs != 1 || rendered != 1 {
		t.Errorf("handler ran %d times, error rendered %d times; want 1 and 1", runs, rendered)
	}
}

// TestServeResetsResponseOnPanic: a panic in the handler reaches the
// middleware around Serve with none of the handler's writes in c's
// response, and the key released (the retry runs).
func TestServeResetsResponseOnPanic(t *testing.T) {
	engine := newEngine(t)
	app := fiber.New()
	app.Use(func(c fiber.Ctx) (err error) {
		defer func() {
			if recover() == nil {
				return
			}
			if got := c.Response().Header.Peek("Set-Cookie"); len(got) > 0 || len(c.Response().Body()) > 0 {
				t.Errorf("after the panic the response holds Set-Cookie %q, body %q", got, c.Response().Body())
			}
			err = c.SendStatus(http.StatusInternalServerError)
		}()
		return c.Next()
	})
	runs := 0
	app.Post("/brew", func(c fiber.Ctx) error {
		return idemfiber3.Serve(engine, c, &op, func(c fiber.Ctx) error {
			if runs++; runs == 1 {
				c.Set("Set-Cookie", "half=written")
				_ = c.SendString("half")
				panic("boom")
			}
			return c.SendStatus(http.StatusCreated)
		})
	})
	if a := post(t, app); a.status != http.StatusInternalServerError {
		t.Fatalf("first answer %d, want 500", a.status)
	}
	if a := post(t, app); a.status != http.StatusCreated || runs != 2 {
		t.Fatalf("retry answered %d after %d runs, want 201 after 2", a.status, runs)
	}
}

// downStore is a store that is down.
type downStore struct{ idem.Store }

func (downStore) Acquire(context.Context, idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	return idemstore.Acquisition{}, fmt.Errorf("%w: down", idem.ErrStoreUnavailable)
}

// TestServeFailOpenMarksDegraded: with fail-open and the store down, the
// handler answers unprotected, marked Idempotency-Degraded.
func TestServeFailOpenMarksDegraded(t *testing.T) {
	engine := idem.NewEngine(downStore{}, idem.WithFailOpen(true))
	app := fiber.New()
	app.Post("/brew", func(c fiber.Ctx) error {
		return idemfiber3.Serve(engine, c, &op, func(c fiber.Ctx) error {
			return c.Status(http.StatusCreated).SendString("brewed")
		})
	})
	a := post(t, app)
	if a.status != http.StatusCreated || a.body != "brewed" || a.header.Get(idem.HeaderDegraded) != "true" {
		t.Errorf("answer %d %q, degraded %q; want 201 brewed, degraded true", a.status, a.body, a.header.Get(idem.HeaderDegraded))
	}
}

// TestServeScopesWithAnHTTPRequest: a WithScope function gets the request
// as net/http sees it (fiber's adaptor builds it), and the handler reads
// its key from c.Context().
func TestServeScopesWithAnHTTPRequest(t *testing.T) {
	engine := newEngine(t, idem.WithScope(func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }))
	app := fiber.New()
	runs := 0
	app.Post("/brew", func(c fiber.Ctx) error {
		return idemfiber3.Serve(engine, c, &op, func(c fiber.Ctx) error {
			runs++
			info, _ := idem.FromContext(c.Context())
			return c.Status(http.StatusCreated).SendString(info.Key)
		})
	})
	for _, tenant := range []string{"a", "b", "a"} {
		if a := post(t, app, "X-Tenant", tenant); a.status != http.StatusCreated || a.body != "k1" {
			t.Errorf("tenant %s: %d %q, want 201 k1", tenant, a.status, a.body)
		}
	}
	if runs != 2 {
		t.Errorf("handler ran %d times, want 2 (one per tenant)", runs)
	}
}

// TestServeAnswersProblemsIntoFiber: the engine's problems reach the
// client through fiber's response as the net/http forms send them: RFC
// 9457 documents, Cache-Control: no-store, and a 409's Retry-After.
func TestServeAnswersProblemsIntoFiber(t *testing.T) {
	engine := newEngine(t)
	entered, gate := make(chan struct{}), make(chan struct{})
	app := fiber.New()
	app.Post("/brew", func(c fiber.Ctx) error {
		return idemfiber3.Serve(engine, c, &op, func(c fiber.Ctx) error {
			entered <- struct{}{}
			<-gate
			return c.SendStatus(http.StatusCreated)
		})
	})
	done := make(chan answer)
	go func() { done <- post(t, app) }()
	<-entered
	conflict := post(t, app)
	close(gate)
	if first := <-done; first.status != http.StatusCreated {
		t.Errorf("first answer %d, want 201", first.status)
	}
	req := httptest.NewRequest(http.MethodPost, "/brew", nil) // no key
	res, err := app.Test(req, fiber.TestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	missing := answer{status: res.StatusCode, header: res.Header}
	for _, c := range []struct {
		a      answer
		status int
	}{{conflict, http.StatusConflict}, {missing, http.StatusBadRequest}} {
		if c.a.status != c.status || c.a.header.Get("Content-Type") != "application/problem+json" || c.a.header.Get("Cache-Control") != "no-store" {
			t.Errorf("answer %d (want %d), Content-Type %q, Cache-Control %q", c.a.status, c.status, c.a.header.Get("Content-Type"), c.a.header.Get("Cache-Control"))
		}
	}
	if conflict.header.Get("Retry-After") == "" {
		t.Errorf("409 without Retry-After")
	}
}

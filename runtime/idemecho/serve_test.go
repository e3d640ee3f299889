package idemecho_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemecho"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

var op = idemop.Operation{ID: "Brew", Method: "POST", Path: "/brew"}

func newEngine(t *testing.T) *idem.Engine {
	return idem.NewEngine(memstore.New())
}

func post(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/brew", nil)
	req.Header.Set("Idempotency-Key", "k1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestServeStoresTheRenderedError: an error the handler returns is what the
// echo instance's HTTPErrorHandler makes of it, on the first answer and on
// its replay; echo renders nothing more.
func TestServeStoresTheRenderedError(t *testing.T) {
	engine := newEngine(t)
	e := echo.New()
	rendered := 0
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		rendered++
		_ = c.String(http.StatusTeapot, "teapot: "+err.Error())
	}
	runs := 0
	e.POST("/brew", func(c echo.Context) error {
		return idemecho.Serve(engine, c, &op, func(c echo.Context) error {
			runs++
			return errors.New("no coffee")
		})
	})
	for i, replayed := range []string{"", "true"} {
		rec := post(e)
		if rec.Code != http.StatusTeapot || rec.Body.String() != "teapot: no coffee" || rec.Header().Get(idemop.HeaderReplayed) != replayed {
			t.Errorf("answer %d: %d %q, replayed %q; want 418 %q, replayed %q", i+1, rec.Code, rec.Body, rec.Header().Get(idemop.HeaderReplayed), "teapot: no coffee", replayed)
		}
	}
	if runs != 1 || rendered != 1 {
		t.Errorf("handler ran %d times, error rendered %d times; want 1 and 1", runs, rendered)
	}
}

// TestServeRestoresResponseOnPanic: a panic in the handler reaches the
// middleware around Serve with c's own response back in place, uncommitted,
// and the key released (the retry runs).
func TestServeRestoresResponseOnPanic(t *testing.T) {
	engine := newEngine(t)
	e := echo.New()
	runs := 0
	e.POST("/brew", func(c echo.Context) (err error) {
		own := c.Response()
		defer func() {
			if recover() == nil {
				return
			}
			if c.Response() != own || own.Committed {
				t.Errorf("after the panic: response %p (own %p), committed %v", c.Response(), own, own.Committed)
			}
			err = c.NoContent(http.StatusInternalServerError)
		}()
		return idemecho.Serve(engine, c, &op, func(c echo.Context) error {
			if runs++; runs == 1 {
				panic("boom")
			}
			return c.NoContent(http.StatusCreated)
		})
	})
	if rec := post(e); rec.Code != http.StatusInternalServerError {
		t.Fatalf("first answer %d, want 500", rec.Code)
	}
	if rec := post(e); rec.Code != http.StatusCreated || runs != 2 {
		t.Fatalf("retry answered %d after %d runs, want 201 after 2", rec.Code, runs)
	}
}

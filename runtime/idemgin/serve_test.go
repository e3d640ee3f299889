package idemgin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgin"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

func init() { gin.SetMode(gin.ReleaseMode) }

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

// TestServeStoresAStatusWithoutBody: gin sends a status set without a body
// only when the request ends; Serve stores that status, not an empty 200.
func TestServeStoresAStatusWithoutBody(t *testing.T) {
	engine := newEngine(t)
	r := gin.New()
	runs := 0
	r.POST("/brew", func(c *gin.Context) {
		idemgin.Serve(engine, c, &op, func(c *gin.Context) {
			runs++
			c.Header("Location", "/brew/1")
			c.Status(http.StatusAccepted)
		})
	})
	for i, replayed := range []string{"", "true"} {
		rec := post(r)
		if rec.Code != http.StatusAccepted || rec.Header().Get("Location") != "/brew/1" || rec.Header().Get(idemop.HeaderReplayed) != replayed {
			t.Errorf("answer %d: %d, Location %q, replayed %q; want 202, /brew/1, replayed %q", i+1, rec.Code, rec.Header().Get("Location"), rec.Header().Get(idemop.HeaderReplayed), replayed)
		}
	}
	if runs != 1 {
		t.Errorf("handler ran %d times, want 1", runs)
	}
}

// TestServeRestoresWriterOnPanic: a panic in the handler reaches gin's
// recovery with c's own writer back in place, unwritten, and the key
// released (the retry runs).
func TestServeRestoresWriterOnPanic(t *testing.T) {
	engine := newEngine(t)
	r := gin.New()
	var own gin.ResponseWriter
	r.Use(func(c *gin.Context) { own = c.Writer; c.Next() })
	r.Use(gin.CustomRecoveryWithWriter(nil, func(c *gin.Context, _ any) {
		if c.Writer != own || c.Writer.Written() {
			t.Errorf("after the panic: writer %T (own %T), written %v", c.Writer, own, c.Writer.Written())
		}
		c.AbortWithStatus(http.StatusInternalServerError)
	}))
	runs := 0
	r.POST("/brew", func(c *gin.Context) {
		idemgin.Serve(engine, c, &op, func(c *gin.Context) {
			if runs++; runs == 1 {
				panic("boom")
			}
			c.Status(http.StatusCreated)
		})
	})
	if rec := post(r); rec.Code != http.StatusInternalServerError {
		t.Fatalf("first answer %d, want 500", rec.Code)
	}
	if rec := post(r); rec.Code != http.StatusCreated || runs != 2 {
		t.Fatalf("retry answered %d after %d runs, want 201 after 2", rec.Code, runs)
	}
}

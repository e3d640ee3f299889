package idemiris_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kataras/iris/v12"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemiris"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

var op = idemop.Operation{ID: "Brew", Method: "POST", Path: "/brew"}

func newEngine(t *testing.T) *idem.Engine {
	return idem.NewEngine(memstore.New())
}

func post(app *iris.Application) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/brew", nil)
	req.Header.Set("Idempotency-Key", "k1")
	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, req)
	return rec
}

func newApp(t *testing.T, register func(app *iris.Application)) *iris.Application {
	app := iris.New()
	app.Logger().SetLevel("disable")
	register(app)
	if err := app.Build(); err != nil {
		t.Fatal(err)
	}
	return app
}

// TestServeStoresAStatusWithoutBody: iris sends a status set without a
// body only when the request ends; Serve stores that status, not an empty
// 200.
func TestServeStoresAStatusWithoutBody(t *testing.T) {
	engine := newEngine(t)
	runs := 0
	app := newApp(t, func(app *iris.Application) {
		app.Post("/brew", func(ctx iris.Context) {
			idemiris.Serve(engine, ctx, &op, func(ctx iris.Context) {
				runs++
				ctx.Header("Location", "/brew/1")
				ctx.StatusCode(http.StatusAccepted)
			})
		})
	})
	for i, replayed := range []string{"", "true"} {
		rec := post(app)
		if rec.Code != http.StatusAccepted || rec.Header().Get("Location") != "/brew/1" || rec.Header().Get(idemop.HeaderReplayed) != replayed {
			t.Errorf("answer %d: %d, Location %q, replayed %q; want 202, /brew/1, replayed %q", i+1, rec.Code, rec.Header().Get("Location"), rec.Header().Get(idemop.HeaderReplayed), replayed)
		}
	}
	if runs != 1 {
		t.Errorf("handler ran %d times, want 1", runs)
	}
}

// TestServeRestoresWriterOnPanic: a panic in the handler reaches the
// middleware around Serve with ctx's own writer back in place, unwritten,
// and the key released (the retry runs).
func TestServeRestoresWriterOnPanic(t *testing.T) {
	engine := newEngine(t)
	runs := 0
	app := newApp(t, func(app *iris.Application) {
		app.UseRouter(func(ctx iris.Context) {
			own := ctx.ResponseWriter()
			defer func() {
				if recover() == nil {
					return
				}
				if ctx.ResponseWriter() != own || ctx.ResponseWriter().Written() > 0 {
					t.Errorf("after the panic: writer %p (own %p), written %d", ctx.ResponseWriter(), own, ctx.ResponseWriter().Written())
				}
				ctx.StopWithStatus(http.StatusInternalServerError)
			}()
			ctx.Next()
		})
		app.Post("/brew", func(ctx iris.Context) {
			idemiris.Serve(engine, ctx, &op, func(ctx iris.Context) {
				if runs++; runs == 1 {
					ctx.Header("Set-Cookie", "half=written")
					panic("boom")
				}
				ctx.StatusCode(http.StatusCreated)
			})
		})
	})
	if rec := post(app); rec.Code != http.StatusInternalServerError || rec.Header().Get("Set-Cookie") != "" {
		t.Fatalf("first answer %d, Set-Cookie %q; want 500 without it", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	if rec := post(app); rec.Code != http.StatusCreated || runs != 2 {
		t.Fatalf("retry answered %d after %d runs, want 201 after 2", rec.Code, runs)
	}
}

// TestCaptureStreamsPastTheLimit: a strict response larger than the
// stored-body limit reaches the client while the handler still writes,
// the recorder holds no more than the limit, and the replay says the body
// was not stored.
func TestCaptureStreamsPastTheLimit(t *testing.T) {
	const limit, chunk, chunks = 64 << 10, 64 << 10, 4
	engine := idem.NewEngine(memstore.New(), idem.WithStoredBodyLimit(limit))
	runs := 0
	var client *httptest.ResponseRecorder
	sentBeforeLast := 0
	app := newApp(t, func(app *iris.Application) {
		app.Post("/brew", func(ctx iris.Context) {
			idemiris.ServeBody(engine, ctx, &op, func(ctx iris.Context) {
				resp, err := idemiris.ServeStrict(engine, ctx, &op, func(ctx iris.Context) (*idem.Response, error) {
					runs++
					return idemiris.Capture(ctx, func(ctx iris.Context) error {
						ctx.ContentType("application/octet-stream")
						ctx.StatusCode(http.StatusCreated)
						for i := range chunks {
							if i == chunks-1 {
								sentBeforeLast = client.Body.Len()
							}
							if _, err := ctx.Write(make([]byte, chunk)); err != nil {
								return err
							}
						}
						return nil
					})
				})
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Write(ctx.ResponseWriter())
			})
		})
	})
	req := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/brew", nil)
		r.Header.Set("Idempotency-Key", "big")
		client = httptest.NewRecorder()
		app.ServeHTTP(client, r)
		return client
	}
	if w := req(); w.Code != http.StatusCreated || w.Body.Len() != chunk*chunks {
		t.Fatalf("first answer: %d, %d bytes; want 201 and %d", w.Code, w.Body.Len(), chunk*chunks)
	}
	if sentBeforeLast < chunk*(chunks-2) {
		t.Errorf("the client had %d bytes before the handler's last write: not streamed", sentBeforeLast)
	}
	if w := req(); w.Code != http.StatusCreated || w.Body.Len() != 0 || w.Header().Get(idemop.HeaderBodyOmitted) != "true" {
		t.Errorf("replay: %d, %d bytes, %v; want 201 without the body, said so", w.Code, w.Body.Len(), w.Header())
	}
	if runs != 1 {
		t.Errorf("handler ran %d times, want 1", runs)
	}
}

package idemfiber_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/valyala/fasthttp"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemfiber"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// op is the benchmark's operation.
var op = idemop.Operation{ID: "Brew", Method: "POST", Path: "/brew"}

// replayStore answers every Acquire with the replay of one record and
// takes no time: a benchmark over it measures the adapter, not a store.
type replayStore struct{ rec *idemstore.Record }

func (s replayStore) Acquire(context.Context, idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: s.rec}, nil
}
func (replayStore) Complete(context.Context, string, string, *idemstore.Record, time.Duration) error {
	return nil
}
func (replayStore) Release(context.Context, string, string) error               { return nil }
func (replayStore) Extend(context.Context, string, string, time.Duration) error { return nil }

// BenchmarkReplay compares a replay through idemfiber.Serve, which reads
// fiber's request in place, with the same engine behind fiber's adaptor
// (each request converted to net/http and the answer back), the
// alternative idemfiber does not take.
func BenchmarkReplay(b *testing.B) {
	rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"ord-1"}`)}
	engine := idem.NewEngine(replayStore{rec})
	never := func(*fiber.Ctx) error { panic("a replay runs no handler") }
	for _, bc := range []struct {
		name string
		h    fiber.Handler
	}{
		{"idemfiber", func(c *fiber.Ctx) error { return idemfiber.Serve(engine, c, &op, never) }},
		{"adaptor", adaptor.HTTPHandler(engine.Middleware(op)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("a replay runs no handler")
		})))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			app := fiber.New()
			app.Post("/brew", bc.h)
			handler := app.Handler()
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetMethod(http.MethodPost)
				ctx.Request.SetRequestURI("/brew")
				ctx.Request.Header.SetContentType("application/json")
				ctx.Request.Header.Set("Idempotency-Key", "k1")
				ctx.Request.SetBodyString(`{"item":"apple","quantity":2}`)
				handler(&ctx)
				if ctx.Response.StatusCode() != http.StatusCreated {
					b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
	}
}

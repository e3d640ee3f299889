package storebench_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// benchPoolSize is the connections of the PostgreSQL pool: above the
// parallel callers, so that none waits for a connection.
const benchPoolSize = 40

var benchOp = &idemop.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key"}

// insertHandler is the business handler of every variant: one INSERT of a
// payment (in the run's transaction under pgstore, autocommit otherwise),
// answered 201 with a small JSON body.
func insertHandler(pool *pgxpool.Pool, table string) http.HandlerFunc {
	sql := "INSERT INTO " + pgx.Identifier{table}.Sanitize() + " (amount) VALUES ($1) RETURNING id"
	return func(w http.ResponseWriter, r *http.Request) {
		var q interface {
			QueryRow(context.Context, string, ...any) pgx.Row
		} = pool
		if tx := pgstore.Tx(r.Context()); tx != nil {
			q = tx
		}
		var id int64
		if err := q.QueryRow(r.Context(), sql, 5).Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d,"status":"created"}`, id)
	}
}

// BenchmarkStores runs one handler that INSERTs a payment from parallel
// callers: bare (no idempotency), under pgstore (the INSERT and the
// completion commit together) and under redisstore (the INSERT commits on
// its own); first requests (a new key each) and replays (one key). It
// reports PostgreSQL and Redis round trips per request.
func BenchmarkStores(b *testing.B) {
	pool, pgRT := pgtest.CountingPool(b, benchPoolSize)
	table := pgtest.Name(b) + "_pay"
	pgtest.Exec(b, pool, "CREATE TABLE "+table+" (id bigserial PRIMARY KEY, amount int NOT NULL)")
	b.Cleanup(func() { pgtest.Drop(b, pool, table) })
	h := insertHandler(pool, table)

	pgs, _ := pgtest.Store(b, pool)
	rdb, prefix := redistest.Keyspace(b)
	redisRT := redistest.CountCommands(rdb)
	rs := redisstore.New(rdb, redisstore.WithPrefix(prefix))

	variants := []struct {
		name  string
		store idemstore.Store // nil: the bare handler
	}{{"bare", nil}, {"pgstore", pgs}, {"redisstore", rs}}
	for _, mode := range []string{"first", "replay"} {
		for _, v := range variants {
			if v.store == nil && mode == "replay" {
				continue
			}
			b.Run(v.name+"/"+mode, func(b *testing.B) {
				serve := h
				if v.store != nil {
					e := idem.NewEngine(v.store)
					serve = func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, benchOp, h) }
				}
				replayKey := rand.Text()
				if mode == "replay" {
					send(b, serve, replayKey)
				}
				pg0, redis0 := pgRT.RoundTrips(), redisRT.RoundTrips()
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := replayKey
						if mode == "first" {
							key = rand.Text()
						}
						send(b, serve, key)
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(pgRT.RoundTrips()-pg0)/float64(b.N), "pg-rt/op")
				b.ReportMetric(float64(redisRT.RoundTrips()-redis0)/float64(b.N), "redis-rt/op")
			})
		}
	}
}

func send(b *testing.B, h http.HandlerFunc, key string) {
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount":5}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h(rec, req)
	if rec.Code != http.StatusCreated {
		b.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

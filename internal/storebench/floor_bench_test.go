package storebench_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/pgtest"
	idem "github.com/idemgen/idemgen/runtime"
)

// floorSenders is the parallel callers of BenchmarkPostgresFloor, per
// GOMAXPROCS: 16 on two cores.
const floorSenders = 8

// oneTransaction is the least an idempotency layer on PostgreSQL can do
// around insertHandler's INSERT, for BenchmarkPostgresFloor: a stored answer
// is one read-only SELECT; a first request is BEGIN with the INSERT of the
// key's row (one round trip), the handler's INSERT in the same
// transaction, and the UPDATE of the key's row with COMMIT (one round
// trip): one commit. It checks nothing else (no fingerprint, no lease, no
// concurrent duplicate), so no store can be cheaper.
type oneTransaction struct {
	pool              *pgxpool.Pool
	pay               string // the payments table, quoted
	read, claim, done string
}

func newOneTransaction(b *testing.B, pool *pgxpool.Pool, pay string) *oneTransaction {
	keys := pgtest.Name(b) + "_keys"
	pgtest.Exec(b, pool, "CREATE TABLE "+keys+" (key text PRIMARY KEY, status int, body bytea)")
	b.Cleanup(func() { pgtest.Drop(b, pool, keys) })
	k := pgx.Identifier{keys}.Sanitize()
	return &oneTransaction{
		pool:  pool,
		pay:   pgx.Identifier{pay}.Sanitize(),
		read:  "SELECT status, body FROM " + k + " WHERE key = $1",
		claim: "INSERT INTO " + k + " (key) VALUES ($1)",
		done:  "UPDATE " + k + " SET status = $2, body = $3 WHERE key = $1",
	}
}

// serve answers key: the stored answer if there is one (replay), else a
// first run.
func (o *oneTransaction) serve(w http.ResponseWriter, key string, replay bool) error {
	ctx := context.Background()
	if replay {
		var status int
		var body []byte
		if err := o.pool.QueryRow(ctx, o.read, key).Scan(&status, &body); err != nil {
			return err
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return nil
	}
	c, err := o.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(o.claim, key)
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	var id int64
	if err := c.QueryRow(ctx, "INSERT INTO "+o.pay+" (amount) VALUES ($1) RETURNING id", 5).Scan(&id); err != nil {
		return err
	}
	body := fmt.Appendf(nil, `{"id":%d,"status":"created"}`, id)
	b = &pgx.Batch{}
	b.Queue(o.done, key, http.StatusCreated, body)
	b.Queue("COMMIT")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
	return nil
}

// BenchmarkPostgresFloor runs insertHandler under pgstore through the
// engine and under the one-transaction floor (oneTransaction), first
// requests (a new key each) and replays (one key), from 16 parallel
// callers on two cores, in floorRounds rounds that alternate the variants
// (take the medians). It reports PostgreSQL round trips per request. Run it against a server with the durable defaults
// (fsync, synchronous_commit on): the commit's flush is the cost that
// matters.
func BenchmarkPostgresFloor(b *testing.B) {
	pool, pgRT := pgtest.CountingPool(b, benchPoolSize)
	var fsync, sync string
	if err := pool.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &sync); err != nil {
		b.Fatal(err)
	}
	b.Logf("server: fsync=%s synchronous_commit=%s", fsync, sync)
	table := pgtest.Name(b) + "_pay"
	pgtest.Exec(b, pool, "CREATE TABLE "+table+" (id bigserial PRIMARY KEY, amount int NOT NULL)")
	b.Cleanup(func() { pgtest.Drop(b, pool, table) })
	h := insertHandler(pool, table)
	pgs, _ := pgtest.Store(b, pool)
	e := idem.NewEngine(pgs)
	viaStore := func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, benchOp, h) }
	floor := newOneTransaction(b, pool, table)

	for round := range floorRounds {
		for _, mode := range []string{"first", "replay"} {
			for _, variant := range []string{"floor", "pgstore"} {
				floorRound(b, round, mode, variant, viaStore, floor, pgRT)
			}
		}
	}
}

// floorRounds is how many rounds BenchmarkPostgresFloor alternates.
const floorRounds = 3

// floorRound is one variant's run in one round of BenchmarkPostgresFloor.
func floorRound(b *testing.B, round int, mode, variant string, viaStore http.HandlerFunc, floor *oneTransaction, pgRT *pgtest.Counter) {
	b.Run(fmt.Sprintf("round%d/%s/%s", round+1, variant, mode), func(b *testing.B) {
		serve := viaStore
		if variant == "floor" {
			serve = func(w http.ResponseWriter, r *http.Request) {
				if err := floor.serve(w, r.Header.Get("Idempotency-Key"), r.Header.Get("X-Replay") != ""); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
				}
			}
		}
		replayKey := rand.Text()
		send(b, serve, replayKey) // its first request, outside the timing
		pg0 := pgRT.RoundTrips()
		b.SetParallelism(floorSenders)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if mode == "first" {
					send(b, serve, rand.Text())
				} else {
					sendReplay(b, serve, replayKey)
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(pgRT.RoundTrips()-pg0)/float64(b.N), "pg-rt/op")
	})
}

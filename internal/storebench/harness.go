package storebench

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/cpumeter"
	"github.com/idemgen/idemgen/internal/pgtest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// The harness of BenchmarkPostgresFloor, exported so that a benchmark of
// another idempotency layer (a peer's, built outside the repository) runs
// in the same harness: the same handler, server, pool and callers.

// PoolSize is the connections of the harness's PostgreSQL pool: above the
// parallel callers, so that none waits for a connection.
const PoolSize = 40

// Senders is the parallel callers per GOMAXPROCS: 16 on two cores.
const Senders = 8

// Rounds is how many rounds Run alternates its variants in, unless
// STOREBENCH_ROUNDS says otherwise.
const Rounds = 3

// RoundCount is how many rounds a benchmark of the harness alternates its
// variants in: STOREBENCH_ROUNDS, or Rounds.
func RoundCount() int {
	if n, err := strconv.Atoi(os.Getenv("STOREBENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return Rounds
}

// ReplayKeys is how many answered keys Run's replays cycle through.
const ReplayKeys = 512

// Op is the operation the engine serves in the harness.
var Op = &idem.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key"}

// Variant is one layer under test: Serve answers a request whose key is
// the Idempotency-Key header, its first or a replay.
type Variant struct {
	Name  string
	Serve http.HandlerFunc
}

// Harness is the server's pool, its round-trip counter and the payments
// table the handler writes.
type Harness struct {
	Pool     *pgxpool.Pool
	Counter  *pgtest.Counter
	Payments string // table name, unquoted
}

// New sets the harness up on DATABASE_URL's server and logs its fsync and
// synchronous_commit.
func New(b *testing.B) *Harness {
	pool, counter := pgtest.CountingPool(b, PoolSize)
	var fsync, sync string
	if err := pool.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &sync); err != nil {
		b.Fatal(err)
	}
	b.Logf("server: fsync=%s synchronous_commit=%s", fsync, sync)
	table := pgtest.Name(b) + "_pay"
	pgtest.Exec(b, pool, "CREATE TABLE "+table+" (id bigserial PRIMARY KEY, amount int NOT NULL)")
	b.Cleanup(func() { pgtest.Drop(b, pool, table) })
	return &Harness{Pool: pool, Counter: counter, Payments: table}
}

// InsertPayment is the business handler's statement through q (the run's
// transaction, or the pool): one payment row, its id returned.
func (h *Harness) InsertPayment(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, "INSERT INTO "+pgx.Identifier{h.Payments}.Sanitize()+" (amount) VALUES ($1) RETURNING id", 5).Scan(&id)
	return id, err
}

// Answer is the handler's answer for payment id.
func Answer(id int64) []byte { return fmt.Appendf(nil, `{"id":%d,"status":"created"}`, id) }

// Handler is the business handler: one INSERT of a payment (in the run's
// transaction under pgstore, autocommit otherwise), answered 201 with
// Answer.
func (h *Harness) Handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var q interface {
			QueryRow(context.Context, string, ...any) pgx.Row
		} = h.Pool
		if tx := pgstore.Tx(r.Context()); tx != nil {
			q = tx
		}
		id, err := h.InsertPayment(r.Context(), q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(Answer(id))
	}
}

// PgstoreVariant is the handler under pgstore through the engine.
func (h *Harness) PgstoreVariant(b *testing.B) Variant {
	return h.pgstoreVariant(b, "pgstore")
}

// PgstoreUnbatchedVariant is PgstoreVariant with every read in a round
// trip of its own (pgstore.WithReadLanes(-1)): what the read lanes save.
func (h *Harness) PgstoreUnbatchedVariant(b *testing.B) Variant {
	return h.pgstoreVariant(b, "pgstore-unbatched", pgstore.WithReadLanes(-1))
}

func (h *Harness) pgstoreVariant(b *testing.B, name string, opts ...pgstore.Option) Variant {
	s, _ := pgtest.Store(b, h.Pool, opts...)
	e := idem.NewEngine(s)
	handler := h.Handler()
	return Variant{Name: name, Serve: func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, Op, handler) }}
}

// PgstoreDirectVariant is pgstore called without the engine: AcquireRun
// with the body's SHA-256 as the fingerprint, the handler's INSERT in the
// run's transaction and Commit with the answer, or the stored answer
// written back. Between ContractFloorVariant and PgstoreVariant, it tells
// the store's cost from the engine's.
func (h *Harness) PgstoreDirectVariant(b *testing.B) Variant {
	s, _ := pgtest.Store(b, h.Pool)
	return Variant{Name: "pgstore-direct", Serve: func(w http.ResponseWriter, r *http.Request) {
		if err := h.serveDirect(w, r, s); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}}
}

func (h *Harness) serveDirect(w http.ResponseWriter, r *http.Request, s *pgstore.Store) error {
	ctx := context.Background()
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	acq, tx, err := s.AcquireRun(ctx, idemstore.AcquireRequest{
		Key: r.Header.Get("Idempotency-Key"), Fingerprint: hex.EncodeToString(sum[:]),
		Token: rand.Text(), Lease: idemstore.DefaultLease,
	})
	switch {
	case err != nil:
		return err
	case acq.Outcome == idemstore.OutcomeReplay:
		maps.Copy(w.Header(), acq.Record.Header)
		w.WriteHeader(acq.Record.Status)
		_, _ = w.Write(acq.Record.Body)
		return nil
	case tx == nil:
		return fmt.Errorf("acquire: %v without a run", acq.Outcome)
	}
	tctx := tx.Context(ctx)
	id, err := h.InsertPayment(tctx, pgstore.Tx(tctx))
	if err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: Answer(id)}
	if err := tx.Commit(ctx, rec, idemstore.DefaultRetention); err != nil {
		return err
	}
	maps.Copy(w.Header(), rec.Header)
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
	return nil
}

// oneTransaction is the least an idempotency layer on PostgreSQL can do
// around the handler's INSERT, for BenchmarkPostgresFloor, as issue 45
// defines it: a read-only SELECT of the key's stored answer, which ends a
// replay; otherwise BEGIN with the INSERT of the key's row (one round
// trip), the handler's INSERT in the same transaction, and the UPDATE of
// the key's row with COMMIT (one round trip): one commit, four round trips
// with the handler's. Like any layer it cannot know whether a key is new
// before it has read it; it checks nothing else (no fingerprint, no lease,
// no concurrent duplicate: a duplicate's INSERT fails or waits), so no
// store that answers replays from one read can be cheaper.
//
// With contract set it is the contract floor: the same transaction and
// round trips, plus what issue 45 itself requires of a layer besides: a
// concurrent duplicate answered at once (the key's transaction-scoped
// advisory lock, tried with BEGIN, where the plain floor's duplicate
// waits on the key row's insert for the handler's whole run), a payload's
// fingerprint (SHA-256 of the body) stored and compared (422), the stored
// answer's headers (as name-value pairs in a text[], which pgx decodes
// without help), an expiry that reads skip and a purge finds by an index,
// a commit that is durable whatever the server's synchronous_commit and a
// transaction that the server ends once its owner is silent for the lease
// (set_config, in the lock's statement). No
// lease column, no fence, no takeover: it is still below any store that
// keeps DESIGN's contract, and the reference that tells what pgstore's
// own code costs from what the contract costs on PostgreSQL.
type oneTransaction struct {
	pool                    *pgxpool.Pool
	pay                     string // the payments table, quoted
	read, lock, claim, done string
	contract                bool
}

func newOneTransaction(b *testing.B, pool *pgxpool.Pool, pay string, contract bool) *oneTransaction {
	keys := pgtest.Name(b) + "_keys"
	k := pgx.Identifier{keys}.Sanitize()
	o := &oneTransaction{pool: pool, pay: pgx.Identifier{pay}.Sanitize(), contract: contract}
	if !contract {
		pgtest.Exec(b, pool, "CREATE TABLE "+k+" (key text PRIMARY KEY, status int, body bytea)")
		o.read = "SELECT status, body FROM " + k + " WHERE key = $1"
		o.claim = "INSERT INTO " + k + " (key) VALUES ($1)"
		o.done = "UPDATE " + k + " SET status = $2, body = $3 WHERE key = $1"
	} else {
		pgtest.Exec(b, pool, "CREATE TABLE "+k+" (key text PRIMARY KEY, fingerprint text NOT NULL, expires_at timestamptz NOT NULL, status int, header text[], body bytea)")
		pgtest.Exec(b, pool, "CREATE INDEX ON "+k+" (expires_at)")
		o.read = "SELECT fingerprint = $2::text, status, header, body FROM " + k + " WHERE key = $1 AND expires_at > statement_timestamp()"
		o.lock = "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)), " + `set_config('synchronous_commit', 'on', true), set_config('idle_in_transaction_session_timeout', '30000', true)`
		o.claim = "INSERT INTO " + k + " (key, fingerprint, expires_at) VALUES ($1, $2, statement_timestamp() + interval '1 day')"
		o.done = "UPDATE " + k + " SET status = $2, header = $4, body = $3 WHERE key = $1"
	}
	b.Cleanup(func() { pgtest.Drop(b, pool, keys) })
	return o
}

// serve answers the request r with key: its stored answer if there is one
// (a replay), else a first run.
func (o *oneTransaction) serve(w http.ResponseWriter, r *http.Request, key string) error {
	ctx := context.Background()
	var fp string // the contract floor's fingerprint of the body
	if o.contract {
		payload, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(payload)
		fp = hex.EncodeToString(sum[:])
	}
	same := true
	var status int
	var header []string // name, value, name, value...
	var body []byte
	var err error
	if o.contract {
		err = o.pool.QueryRow(ctx, o.read, key, fp).Scan(&same, &status, &header, &body)
	} else { // the floor's read as issue 45 gives it: two columns, nothing else
		err = o.pool.QueryRow(ctx, o.read, key).Scan(&status, &body)
	}
	switch {
	case err == nil && !same:
		w.WriteHeader(http.StatusUnprocessableEntity)
		return nil
	case err == nil:
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Add(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return nil
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	c, err := o.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	var locked bool
	if o.contract {
		b.Queue(o.lock, key).QueryRow(func(row pgx.Row) error { return row.Scan(&locked, nil, nil) })
		b.Queue(o.claim, key, fp)
	} else {
		b.Queue(o.claim, key)
	}
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if o.contract && !locked {
		_, _ = c.Exec(ctx, "ROLLBACK")
		w.WriteHeader(http.StatusConflict)
		return nil
	}
	var id int64
	if err := c.QueryRow(ctx, "INSERT INTO "+o.pay+" (amount) VALUES ($1) RETURNING id", 5).Scan(&id); err != nil {
		return err
	}
	body = Answer(id)
	header = []string{"Content-Type", "application/json"}
	b = &pgx.Batch{}
	if o.contract {
		b.Queue(o.done, key, http.StatusCreated, body, header)
	} else {
		b.Queue(o.done, key, http.StatusCreated, body)
	}
	b.Queue("COMMIT")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
	return nil
}

// FloorVariant is the one-transaction floor (oneTransaction).
func (h *Harness) FloorVariant(b *testing.B) Variant {
	return h.floorVariant(b, "floor", false)
}

// ContractFloorVariant is the contract floor (oneTransaction, contract).
func (h *Harness) ContractFloorVariant(b *testing.B) Variant {
	return h.floorVariant(b, "contract-floor", true)
}

func (h *Harness) floorVariant(b *testing.B, name string, contract bool) Variant {
	floor := newOneTransaction(b, h.Pool, h.Payments, contract)
	return Variant{Name: name, Serve: func(w http.ResponseWriter, r *http.Request) {
		if err := floor.serve(w, r, r.Header.Get("Idempotency-Key")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}}
}

// Run runs the variants from Senders parallel callers per GOMAXPROCS, first
// requests (a new key each) then replays (of ReplayKeys keys answered
// before, in turn), in
// Rounds rounds that alternate the variants (take the medians), as
// sub-benchmarks "roundN/variant/mode". It reports PostgreSQL round trips
// per request (the harness's pool only).
func (h *Harness) Run(b *testing.B, variants ...Variant) {
	for round := range RoundCount() {
		for _, mode := range []string{"first", "replay"} {
			for _, v := range variants {
				b.Run(fmt.Sprintf("round%d/%s/%s", round+1, v.Name, mode), func(b *testing.B) {
					// Replays cycle through ReplayKeys keys answered before,
					// so that concurrent callers seldom replay the same key
					// at once (a store may share such reads).
					var answered [ReplayKeys]string
					if mode == "replay" {
						for i := range answered {
							answered[i] = rand.Text()
							Send(b, v.Serve, answered[i]) // outside the timing
						}
					}
					var next atomic.Uint64
					// Each variant starts right after a checkpoint, so that
					// none pays more than another for the full-page images
					// that the first write of a page after one costs. (A
					// role that may not checkpoint measures without.)
					_, _ = h.Pool.Exec(context.Background(), "CHECKPOINT")
					rt0 := h.Counter.RoundTrips()
					wal0 := h.walLSN(b)
					cpu := cpumeter.Start()
					b.SetParallelism(Senders)
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if mode == "first" {
								Send(b, v.Serve, rand.Text())
							} else {
								Send(b, v.Serve, answered[next.Add(1)%ReplayKeys])
							}
						}
					})
					b.StopTimer()
					b.ReportMetric(float64(h.Counter.RoundTrips()-rt0)/float64(b.N), "pg-rt/op")
					b.ReportMetric(float64(h.walBytesSince(b, wal0))/float64(b.N), "wal-B/op")
					cpu.Report(b)
				})
			}
		}
	}
}

// Alternate runs op from Senders parallel callers per GOMAXPROCS under
// each of names in turn, in RoundCount rounds, as sub-benchmarks
// "roundN/name", reporting the CPU per call (cpumeter); op gets the
// sub-benchmark, the name and the call's number (from 1) within it, and
// returns false to stop its caller (after a failure it reported).
func Alternate(b *testing.B, names []string, op func(b *testing.B, name string, n uint64) bool) {
	for round := range RoundCount() {
		for _, name := range names {
			b.Run(fmt.Sprintf("round%d/%s", round+1, name), func(b *testing.B) {
				var next atomic.Uint64
				cpu := cpumeter.Start()
				b.SetParallelism(Senders)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() && op(b, name, next.Add(1)) {
					}
				})
				cpu.Report(b)
			})
		}
	}
}

// walLSN is the server's current WAL insert position.
func (h *Harness) walLSN(b *testing.B) string {
	var lsn string
	if err := h.Pool.QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

// walBytesSince is how much WAL the server has written since lsn: the
// variant's writes and their full-page images (the harness's statements
// write none), which the commits flush.
func (h *Harness) walBytesSince(b *testing.B, lsn string) int64 {
	var n int64
	if err := h.Pool.QueryRow(context.Background(), "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// Send sends one request with key to h and fails b unless it is answered
// 201.
func Send(b *testing.B, h http.HandlerFunc, key string) {
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount":5}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h(rec, req)
	if rec.Code != http.StatusCreated {
		b.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

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
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// Postgres is the harness on PostgreSQL: the server's pool, its round-trip
// counter and the payments table the handler writes.
type Postgres struct {
	Pool     *pgxpool.Pool
	Counter  *pgtest.Counter
	Payments string // table name, unquoted
}

// NewPostgres sets the harness up on STOREBENCH_DATABASE_URL's server, or
// DATABASE_URL's when that is not set, every session with
// synchronous_commit on (whatever the server's default), as production
// runs. Give it a server with fsync on: the test command's runs with fsync
// off, which makes every commit cheaper than production's (the table's
// heading says which it was).
func NewPostgres(b *testing.B) *Postgres {
	url := os.Getenv("STOREBENCH_DATABASE_URL")
	if url == "" {
		url = pgtest.URL(b)
	}
	pool, counter := pgtest.CountingPoolOf(b, withRuntimeParam(url, "synchronous_commit", "on"), PoolSize)
	table := pgtest.Name(b) + "_pay"
	pgtest.Exec(b, pool, "CREATE TABLE "+pgx.Identifier{table}.Sanitize()+" (id bigserial PRIMARY KEY, amount int NOT NULL)")
	b.Cleanup(func() { pgtest.Drop(b, pool, table) })
	return &Postgres{Pool: pool, Counter: counter, Payments: table}
}

// withRuntimeParam is the connection string conn with the session setting
// name = value, in URL or keyword/value form.
func withRuntimeParam(conn, name, value string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(name, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return conn + " " + name + "=" + value
}

// Server is the harness's server for Run: its durability settings, and a
// meter that starts each run right after a CHECKPOINT, so that none pays
// more than another for the full-page images that the first write of a
// page after one costs (a role that may not checkpoint measures without),
// and reports PostgreSQL round trips (this pool's) and WAL bytes (the
// server's, other clients' included) per request.
func (p *Postgres) Server(b *testing.B) Server {
	var fsync, sync, version string
	if err := p.Pool.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('server_version')").Scan(&fsync, &sync, &version); err != nil {
		b.Fatal(err)
	}
	return Server{
		Name:     "PostgreSQL " + version,
		Settings: "fsync=" + fsync + ", synchronous_commit=" + sync,
		Meter: func(b *testing.B) func(b *testing.B) {
			_, _ = p.Pool.Exec(context.Background(), "CHECKPOINT")
			wal0 := p.walLSN(b)
			rt0 := p.Counter.RoundTrips()
			return func(b *testing.B) {
				b.ReportMetric(float64(p.Counter.RoundTrips()-rt0)/float64(b.N), "pg-rt/op")
				b.ReportMetric(float64(p.walBytesSince(b, wal0))/float64(b.N), "wal-B/op")
			}
		},
	}
}

// Variants are the harness's variants on PostgreSQL, the floor first, as
// MySQL's (MySQL.Variants):
//
//   - floor: the one-transaction floor (oneTransaction);
//   - contract-floor: the same, plus what any layer must do besides (a
//     duplicate answered at once, a fingerprint, headers, expiry, a
//     durable commit, a frozen owner's bound);
//   - store-calls: pgstore's AcquireRun and Commit, without the engine;
//   - store-unbatched: the handler under pgstore through the engine, every
//     read in a round trip of its own (WithReadLanes(-1));
//   - store: the same with the read lanes, pgstore's default.
func (p *Postgres) Variants(b *testing.B) []Variant {
	return []Variant{
		p.floorVariant(b, "floor", false),
		p.floorVariant(b, "contract-floor", true),
		p.storeCallsVariant(b),
		p.storeVariant(b, "store-unbatched", pgstore.WithReadLanes(-1)),
		p.StoreVariant(b),
	}
}

// querier is what the handler's INSERT goes through: the run's
// transaction, a floor's connection or the pool.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// insertPayment is the business handler's statement through q: one payment
// row, its id returned.
func (p *Postgres) insertPayment(ctx context.Context, q querier) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, "INSERT INTO "+pgx.Identifier{p.Payments}.Sanitize()+" (amount) VALUES ($1) RETURNING id", 5).Scan(&id)
	return id, err
}

// Handler is the business handler: one INSERT of a payment (in the run's
// transaction under pgstore, autocommit otherwise), answered 201 with
// Answer.
func (p *Postgres) Handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var q querier = p.Pool
		if tx := pgstore.Tx(r.Context()); tx != nil {
			q = tx
		}
		id, err := p.insertPayment(r.Context(), q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		created(w, Answer(id))
	}
}

// StoreVariant is the handler under pgstore through the engine.
func (p *Postgres) StoreVariant(b *testing.B) Variant {
	return p.storeVariant(b, "store")
}

func (p *Postgres) storeVariant(b *testing.B, name string, opts ...pgstore.Option) Variant {
	s, _ := pgtest.Store(b, p.Pool, opts...)
	e := idem.NewEngine(s)
	handler := p.Handler()
	return Variant{Name: name, Serve: func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, Op, handler) }}
}

// storeCallsVariant is pgstore called without the engine: AcquireRun with
// the body's SHA-256 as the fingerprint, the handler's INSERT in the run's
// transaction and Commit with the answer, or the stored answer written
// back. Between the contract floor and the store through the engine, it
// tells the store's cost from the engine's.
func (p *Postgres) storeCallsVariant(b *testing.B) Variant {
	s, _ := pgtest.Store(b, p.Pool)
	return Variant{Name: "store-calls", Serve: func(w http.ResponseWriter, r *http.Request) {
		if err := p.serveCalls(w, r, s); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}}
}

func (p *Postgres) serveCalls(w http.ResponseWriter, r *http.Request, s *pgstore.Store) error {
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
	id, err := p.insertPayment(tctx, pgstore.Tx(tctx))
	if err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: Answer(id)}
	if err := tx.Commit(ctx, rec, idemstore.DefaultRetention); err != nil {
		return err
	}
	created(w, rec.Body)
	return nil
}

// oneTransaction is the least an idempotency layer on PostgreSQL can do
// around the handler's INSERT: a read-only SELECT of the key's stored
// answer, which ends a replay; otherwise BEGIN with the INSERT of the
// key's row (one round trip), the handler's INSERT in the same
// transaction, and the UPDATE of the key's row with COMMIT (one round
// trip): one commit, four round trips with the handler's. Like any layer
// it cannot know whether a key is new before it has read it; it checks
// nothing else (no fingerprint, no lease, no concurrent duplicate: a
// duplicate's INSERT fails or waits), so no store that answers replays
// from one read can be cheaper.
//
// With contract set it is the contract floor: the same transaction and
// round trips, plus what idemgen's contract requires of any layer
// besides: a concurrent duplicate answered at once (the key's transaction-scoped
// advisory lock, tried with BEGIN, where the plain floor's duplicate waits
// on the key row's insert for the handler's whole run), a payload's
// fingerprint (SHA-256 of the body) stored and compared (422), the stored
// answer's headers (as name-value pairs in a text[], which pgx decodes
// without help), an expiry that reads skip and a purge finds by an index,
// a commit that is durable whatever the server's synchronous_commit and a
// transaction that the server ends once its owner is silent for the lease
// (set_config, in the lock's statement). No lease column, no fence, no
// takeover: it is still below any store that keeps the whole contract, and
// the reference that tells what pgstore's own code costs from what the
// contract costs on PostgreSQL.
type oneTransaction struct {
	p                       *Postgres
	read, lock, claim, done string
	contract                bool
}

func (p *Postgres) newOneTransaction(b *testing.B, contract bool) *oneTransaction {
	keys := pgtest.Name(b) + "_keys"
	k := pgx.Identifier{keys}.Sanitize()
	o := &oneTransaction{p: p, contract: contract}
	if !contract {
		pgtest.Exec(b, p.Pool, "CREATE TABLE "+k+" (key text PRIMARY KEY, status int, body bytea)")
		o.read = "SELECT status, body FROM " + k + " WHERE key = $1"
		o.claim = "INSERT INTO " + k + " (key) VALUES ($1)"
		o.done = "UPDATE " + k + " SET status = $2, body = $3 WHERE key = $1"
	} else {
		pgtest.Exec(b, p.Pool, "CREATE TABLE "+k+" (key text PRIMARY KEY, fingerprint text NOT NULL, expires_at timestamptz NOT NULL, status int, header text[], body bytea)")
		pgtest.Exec(b, p.Pool, "CREATE INDEX ON "+k+" (expires_at)")
		o.read = "SELECT fingerprint = $2::text, status, header, body FROM " + k + " WHERE key = $1 AND expires_at > statement_timestamp()"
		o.lock = "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)), " + `set_config('synchronous_commit', 'on', true), set_config('idle_in_transaction_session_timeout', '30000', true)`
		o.claim = "INSERT INTO " + k + " (key, fingerprint, expires_at) VALUES ($1, $2, statement_timestamp() + interval '1 day')"
		o.done = "UPDATE " + k + " SET status = $2, header = $4, body = $3 WHERE key = $1"
	}
	b.Cleanup(func() { pgtest.Drop(b, p.Pool, keys) })
	return o
}

// serve answers the request r with key: its stored answer if there is one
// (a replay), else a first run.
func (o *oneTransaction) serve(w http.ResponseWriter, r *http.Request, key string) error {
	ctx := context.Background()
	pool := o.p.Pool
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
		err = pool.QueryRow(ctx, o.read, key, fp).Scan(&same, &status, &header, &body)
	} else { // the floor's read: two columns, nothing else
		err = pool.QueryRow(ctx, o.read, key).Scan(&status, &body)
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
	c, err := pool.Acquire(ctx)
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
	id, err := o.p.insertPayment(ctx, c)
	if err != nil {
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
	created(w, body)
	return nil
}

func (p *Postgres) floorVariant(b *testing.B, name string, contract bool) Variant {
	floor := p.newOneTransaction(b, contract)
	return Variant{Name: name, Serve: func(w http.ResponseWriter, r *http.Request) {
		if err := floor.serve(w, r, r.Header.Get("Idempotency-Key")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}}
}

// walLSN is the server's current WAL insert position.
func (p *Postgres) walLSN(b *testing.B) string {
	var lsn string
	if err := p.Pool.QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

// walBytesSince is how much WAL the server has written since lsn: the
// variant's writes and their full-page images (the harness's statements
// write none), which the commits flush, and other clients' of the server.
func (p *Postgres) walBytesSince(b *testing.B, lsn string) int64 {
	var n int64
	if err := p.Pool.QueryRow(context.Background(), "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/headerjson"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// Store is the [idemstore.Store] on MySQL or MariaDB (InnoDB), and an
// [idemstore.TxStore] and [idemstore.StepStore]: one row per key in one
// table, each transition one statement under the row's lock, timed only by
// the database's clock. It is safe for concurrent use.
//
// A replay, a mismatch or a conflict costs one read-only statement (a
// consistent read: no lock, no write). A first request costs that read and
// the run's transaction: START TRANSACTION, the claim, the handler's
// statements, the completion's UPDATE and COMMIT, one commit in all (see
// [Store.AcquireRun]).
//
// Size the pool (sql.DB.SetMaxOpenConns) above the number of requests that
// run handlers at once: each holds a connection for its transaction.
//
// Every error it returns, other than [idemstore.ErrNotOwner] and the
// argument checks, is a *[idemstore.StoreError], which matches
// [idemstore.ErrStoreUnavailable] under errors.Is; a missing table, column
// or right, or a server set up so that a commit can be lost, also matches
// [idemstore.ErrStoreMisconfigured].
type Store struct {
	db *sql.DB
	// core runs what the SQL stores share (options, table, the schema's
	// verdict, the purge, the methods' flows, the open claims of this
	// process) over ops, this store's statements.
	core        *sqlfamily.Store[*runTx]
	abandonedUS int64 // the abandoned TTL in whole ms, as µs
	maxRecord   int64 // WithMaxRecord
	// packet is the server's max_allowed_packet as Check last read it (0
	// before): a record larger is stored without its body (complete).
	packet atomic.Int64

	sql   statements
	steps stepStatements // the step journal's (steps.go)

	prep   atomic.Pointer[prepared] // statements(), once prepared
	prepMu sync.Mutex
	// sessions: driver connection -> the idle timeout the store set on
	// its session (tx.go, prepareSession), sessionCount its entries.
	sessions     sync.Map
	sessionCount atomic.Int64
	// lanes batch the reads of concurrent acquires (readbatch.go); none
	// when WithReadLanes turned them off (each read is sent alone).
	lanes     *lanes.Lanes[readReq, readReply]
	batchMu   sync.Mutex
	batchRead [len(batchSizes)]atomic.Pointer[sql.Stmt] // the batched reads, prepared once each (readbatch.go)

}

var (
	_ idemstore.Store   = (*Store)(nil)
	_ idemstore.TxStore = (*Store)(nil)
)

// Option configures a [Store].
type Option func(*Store)

// Defaults of the options.
const (
	DefaultPurgeInterval = sqlfamily.DefaultPurgeInterval // WithPurgeInterval: a minute
	DefaultPurgeBatch    = sqlfamily.DefaultPurgeBatch    // WithPurgeBatch: 1000
	// DefaultMaxRecord is the largest stored response WithMaxRecord
	// assumes: the engine's default stored-body limit (1 MiB,
	// idem.DefaultStoredBodyLimit) and 64 KiB of headers.
	DefaultMaxRecord = 1<<20 + 64<<10
)

// WithTable sets the records' table: "name" or "database.name", each part a
// plain identifier. The default is [DefaultTable], in the connection's
// database. A name that is not valid makes every call of the store fail
// with an error that says so.
func WithTable(name string) Option {
	return func(s *Store) { s.core.SetTable(name) }
}

// WithAbandonedTTL sets how long an in-progress record outlives its lease
// deadline. Until then a later acquire takes the record over with the next
// fence number; afterwards it starts again at fence 1. The default is
// [idemstore.DefaultRetention]; d <= 0 keeps the default.
func WithAbandonedTTL(d time.Duration) Option {
	return func(s *Store) { s.core.SetAbandonedTTL(d) }
}

// WithPurgeInterval sets how often the store deletes expired records in the
// background (see [Store.Purge]); the default is [DefaultPurgeInterval]. d <
// 0 turns the background purge off: call Purge yourself (a cron job, one
// instance, or every instance: they skip each other's rows). d == 0 keeps
// the default.
func WithPurgeInterval(d time.Duration) Option {
	return func(s *Store) { s.core.SetPurgeInterval(d) }
}

// WithPurgeBatch sets how many expired records one purge statement deletes
// (default [DefaultPurgeBatch]); n <= 0 keeps the default.
func WithPurgeBatch(n int) Option {
	return func(s *Store) { s.core.SetPurgeBatch(n) }
}

// WithMaxRecord sets the largest stored response the store must be able to
// write and read back, in bytes (body and headers): the engine's stored-body
// limit (idem.WithStoredBodyLimit) plus its headers. [Store.Check] refuses
// a server whose max_allowed_packet is below it, since such a record could
// be neither completed nor replayed. A larger record than the server's
// max_allowed_packet takes (a stored-body limit raised past WithMaxRecord)
// is stored without its body, as the engine stores a body past its limit:
// its client gets the whole answer, its replays the status and headers,
// marked Idempotency-Body-Omitted: true. The default is [DefaultMaxRecord];
// n <= 0 keeps it.
func WithMaxRecord(n int64) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxRecord = n
		}
	}
}

// WithReadLanes sets how many reads (the read-only statement that starts
// every acquire, and all of a replay) the store keeps in flight at once
// before it batches the reads that come meanwhile: a read that finds a
// lane free is sent at once, alone; while every lane waits for the server,
// the reads that come are sent together by the next free lane, as one
// SELECT ... WHERE key IN (...) (readbatch.go). The default is GOMAXPROCS.
// n < 0 sends every read alone; n == 0 keeps the default.
func WithReadLanes(n int) Option {
	return func(s *Store) { s.core.SetReadLanes(n) }
}

// New returns a store on db (a pool of github.com/go-sql-driver/mysql
// connections) configured by opts. The table must exist (apply [Schema] with
// your migrations, or call [Store.CreateSchema]); see [Store.Check] for a
// readiness probe. From its first acquire the store purges expired records
// in the background until [Store.Close].
func New(db *sql.DB, opts ...Option) *Store {
	s := &Store{db: db, maxRecord: DefaultMaxRecord}
	s.core = sqlfamily.NewStore[*runTx](&dialect, (*ops)(s))
	sqlfamily.Apply(s, opts)
	s.lanes = s.newReadLanes(s.core.ReadLanes())
	s.abandonedUS = s.core.Abandoned()
	s.sql = newStatements(s.core.Table.Quoted)
	s.steps = newStepStatements(s.core.Table)
	return s
}

// Close stops the background purge, waits for a purge in flight, and
// closes the store's prepared statements. It does not close the pool. An
// acquire after Close, and the commit of a run still open, fail with an
// error matching [idemstore.ErrStoreUnavailable] that says the store is
// closed (one under way as Close closes the statements, with database/sql's
// error for a closed statement).
func (s *Store) Close() {
	s.core.Close()
	s.prepMu.Lock()
	defer s.prepMu.Unlock()
	if p := s.prep.Swap(nil); p != nil {
		p.close()
	}
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	for i := range s.batchRead {
		if st := s.batchRead[i].Swap(nil); st != nil {
			_ = st.Close()
		}
	}
}

// Acquire implements [idemstore.Store]. A zero req.Lease means
// [idemstore.DefaultLease].
//
// A table or server the store cannot keep its promise on is refused before
// anything runs: the store runs [Store.Check] before its first acquire and
// every 30 s after (every second while it fails), and a statement of its
// own that the table refuses (a value too long, a NOT NULL or CHECK
// constraint, a trigger that signalled) counts as a failed Check.
// Meanwhile Acquire returns the error matching
// [idemstore.ErrStoreMisconfigured] that says what to change, which the
// engine answers 503 store-misconfigured without running the handler.
//
// One read-only statement answers a replay, a mismatch or a conflict. A key
// that is absent is then claimed with one INSERT (fence 1); one that is
// expired, or in progress past its lease, or written between the read and
// the INSERT, with an INSERT ... ON DUPLICATE KEY UPDATE, which takes it
// over under the row's lock (fence 1 for an expired record, fence + 1 for
// a lapsed one) and answers the fence it took; an attempt that lost the
// race to a concurrent one reads the row again.
func (s *Store) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	return s.core.Acquire(ctx, req)
}

// ops is the store as its core drives it (sqlfamily.Driver): what its
// methods send to the database.
type ops Store

// Acquire is [Store.Acquire]'s read and claim.
func (o *ops) Acquire(ctx context.Context, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, error) {
	s := (*Store)(o)
	for attempt := 0; ; attempt++ {
		acq, how, err := s.read(ctx, req.Key, req.Fingerprint)
		if err != nil || how == answered {
			return acq, err
		}
		st, err := s.statements(ctx)
		if err != nil {
			return idemstore.Acquisition{}, err
		}
		res, err := claimRow(ctx, st.insert, st.claim, how, (*sql.Stmt).ExecContext,
			req.Key, req.Fingerprint, req.Token, lease, lease+s.abandonedUS)
		if me := (*mysql.MySQLError)(nil); errors.As(err, &me) && (me.Number == errLockWait || me.Number == errLockNoWait) {
			// An open claim (AcquireRun) holds the row.
			return dialect.Held(lease), nil
		}
		if err != nil {
			return idemstore.Acquisition{}, s.core.Refused("acquire", dialect.StoreError("acquire", err))
		}
		fence, err := res.LastInsertId()
		switch {
		case err != nil:
			return idemstore.Acquisition{}, dialect.StoreError("acquire", err)
		case fence > 0:
			return sqlfamily.Claimed(fence, fence > 1), nil
		case attempt > 0:
			// Claimed by another attempt between two reads twice.
			return sqlfamily.Moment(), nil
		}
		// Another attempt claimed the key between the read and the claim:
		// read what it holds now.
	}
}

// claimHow is what the acquire's read leaves to do.
type claimHow uint8

const (
	answered  claimHow = iota // nothing: the read answered (a replay, a mismatch, a conflict)
	claimNew                  // the key has no row: insert one
	claimOver                 // the key's row is expired, or in progress past its lease: take it over
)

// claimRow claims a key with args (claimSQL's) through exec: with insert,
// the plain INSERT, where the read found no row (how claimNew), and with
// claim, the INSERT ... ON DUPLICATE KEY UPDATE, where it found one to take
// over or the INSERT found one written since. A duplicate entry rolls back
// only its statement, not the transaction it runs in; it leaves a shared
// lock on the row, which the claim then takes exclusively, or, where
// another claim holds it too, is refused without waiting (a conflict).
func claimRow(ctx context.Context, insert, claim *sql.Stmt, how claimHow, exec func(*sql.Stmt, context.Context, ...any) (sql.Result, error), args ...any) (sql.Result, error) {
	if how == claimNew {
		res, err := exec(insert, ctx, args...)
		if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != errDupEntry {
			return res, err
		}
	}
	return exec(claim, ctx, args...)
}

// read is the acquire's read of key: the acquisition it answers (how
// answered), or how to claim the key, which is free (absent, expired, or,
// with acq.Outcome OutcomeRecovered, in progress with this fingerprint past
// its lease).
func (s *Store) read(ctx context.Context, key, fingerprint string) (acq idemstore.Acquisition, how claimHow, err error) {
	r, err := s.lanes.Do(ctx, readReq{key, fingerprint})
	if err != nil && !isStoreError(err) {
		err = dialect.StoreError("acquire", err) // its context ended while it waited
	}
	return r.acq, r.how, err
}

// isStoreError reports whether err is a *idemstore.StoreError. (Its
// target, which escapes, is allocated only when it is called: for an
// error.)
func isStoreError(err error) bool {
	var se *idemstore.StoreError
	return errors.As(err, &se)
}

// readOne is read in a round trip of its own.
func (s *Store) readOne(ctx context.Context, key, fingerprint string) (acq idemstore.Acquisition, how claimHow, err error) {
	st, err := s.statements(ctx)
	if err != nil {
		return idemstore.Acquisition{}, answered, err
	}
	var r record
	err = st.read.QueryRowContext(ctx, key).Scan(r.dest()...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return idemstore.Acquisition{}, claimNew, nil
	case err != nil:
		return idemstore.Acquisition{}, answered, s.core.Refused("acquire", dialect.StoreError("acquire", err))
	}
	return r.answer(fingerprint)
}

// record is what the read statements return of a key's row (readColumns).
type record struct {
	live   bool // not expired
	fp     string
	leftUS int64
	status sql.NullInt32
	row    sqlfamily.Row
}

// dest are the Scan destinations of readColumns.
func (r *record) dest() []any {
	return []any{&r.live, &r.fp, &r.row.Completed, &r.leftUS, &r.status, &r.row.Header, &r.row.Body, &r.row.BodyOmitted}
}

// answer is the read's answer to a request with fingerprint; the record
// it returns holds r's body.
func (r *record) answer(fingerprint string) (acq idemstore.Acquisition, how claimHow, err error) {
	if !r.live {
		return idemstore.Acquisition{}, claimOver, nil
	}
	r.row.SameFingerprint, r.row.Left = r.fp == fingerprint, time.Duration(r.leftUS)*time.Microsecond
	r.row.Status, r.row.HasStatus = r.status.Int32, r.status.Valid
	acq, lapsed, err := r.row.Answer()
	switch {
	case err != nil:
		return idemstore.Acquisition{}, answered, dialect.StoreError("acquire", err)
	case lapsed:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeRecovered}, claimOver, nil
	}
	return acq, answered, nil
}

// Complete implements [idemstore.Store]: it stores rec if token still owns
// the in-progress record (its lease may have lapsed, as long as no other
// attempt took it over). The engine calls it only for a store that is not
// an [idemstore.TxStore]; mysqlstore's runs complete through
// [idemstore.RunTx.Commit].
func (s *Store) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	return s.core.Complete(ctx, key, token, rec, retention)
}

// Complete is [Store.Complete]'s statement, on the pool.
func (o *ops) Complete(ctx context.Context, key, token string, rec *idemstore.Record, us int64) (int64, error) {
	return (*Store)(o).complete(ctx, func(ctx context.Context, args ...any) (sql.Result, error) {
		return o.db.ExecContext(ctx, o.sql.complete, args...)
	}, key, token, 0, rec, us)
}

// complete writes rec, kept for us, through exec (the completion's
// statement, on the pool or in a transaction) if token (and fence, unless
// 0) own key's in-progress record, and returns how many rows it changed. A
// record too large for the server's max_allowed_packet is written without
// its body, its replays marked as such (BodyOmitted).
func (s *Store) complete(ctx context.Context, exec func(ctx context.Context, args ...any) (sql.Result, error), key, token string, fence int64, rec *idemstore.Record, us int64) (int64, error) {
	hb := headerjson.Encode(rec.Header)
	body, omitted := rec.Body, rec.BodyOmitted
	if packet := s.packet.Load(); packet > 0 && int64(len(hb)+len(body))+packetOverhead > packet {
		// The server would refuse the statement (and could not send
		// the row back): keep the answer as the engine keeps one past
		// its stored-body limit, without the body.
		body, omitted = nil, true
	}
	if body == nil {
		body = []byte{}
	}
	return affected(exec(ctx, us, us, us, rec.Status, hb, body, omitted, key, token, fence, fence))
}

// affected is how many rows a statement that returned res changed, or its
// failure err.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Release implements [idemstore.Store].
func (s *Store) Release(ctx context.Context, key, token string) error {
	return s.core.Release(ctx, key, token)
}

// Release is [Store.Release]'s statement.
func (o *ops) Release(ctx context.Context, key, token string) (int64, error) {
	return affected(o.db.ExecContext(ctx, o.sql.release, key, token))
}

// Extend implements [idemstore.Store].
func (s *Store) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	return s.core.Extend(ctx, key, token, lease)
}

// Extend is [Store.Extend]'s statement. Without CLIENT_FOUND_ROWS a row
// set to the values it held counts for nothing: where it changed none, it
// asks whether token owns the record, and answers one row if so.
func (o *ops) Extend(ctx context.Context, key, token string, us int64) (int64, error) {
	n, err := affected(o.db.ExecContext(ctx, o.sql.extend, us, us+o.abandonedUS, key, token))
	if err != nil || n > 0 {
		return n, err
	}
	var one int
	switch err := o.db.QueryRowContext(ctx, o.sql.owned, key, token).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return 1, nil
}

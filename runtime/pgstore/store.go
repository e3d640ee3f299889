package pgstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/headerjson"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// Store is the [idemstore.Store] on PostgreSQL, and an [idemstore.TxStore]: one row per
// key in one table, timed only by the database's clock. It is safe for
// concurrent use.
//
// Through the engine (AcquireRun), a first request costs three round trips
// and one commit besides the handler's own statements: the read-only
// SELECT, BEGIN with the claim, the completion with COMMIT; a replay or a
// mismatch one read-only SELECT; a conflict with an open claim three (the
// SELECT, the claim that finds the key's lock taken, the ROLLBACK), or,
// for a duplicate of a key this store's process is claiming, none or the
// read it shares with the acquire that claims. Under load, the reads of
// concurrent acquires share round trips (WithReadLanes).
//
// Size the pool above the number of requests that run handlers at once:
// each holds a connection for its transaction, from the claim to the
// commit.
//
// Every error it returns, other than [idemstore.ErrNotOwner] and the argument
// checks, is a *[idemstore.StoreError], which matches [idemstore.ErrStoreUnavailable]
// under errors.Is; a missing table, column or right also matches
// [idemstore.ErrStoreMisconfigured].
type Store struct {
	pool *pgxpool.Pool
	// core runs what the SQL stores share (options, table, the schema's
	// verdict, the purge, the methods' flows, the open runs' transactions
	// by key and owner token) over ops, this store's statements.
	core        *sqlfamily.Store[*runTx]
	abandonedMS int64        // the abandoned TTL in whole ms, rounded up
	maxClaiming int64        // AcquireRun calls under way at once; one more is refused (busy)
	claiming    atomic.Int64 // AcquireRun calls under way

	sql   statements
	steps stepStatements // the step journal's (steps.go)

	// open are the same by key, the latest claim of each (or a marker of
	// a claim being taken): a duplicate of a key claimed here is answered
	// a conflict without a round trip.
	open sync.Map // string -> *runTx
	// reads are the reads of keys under way, shared by the acquires of a
	// key that come meanwhile (tx.go, readShared).
	reads sync.Map // string -> *reading
	// lanes batch the reads of concurrent acquires (readbatch.go); none
	// when WithReadLanes turned them off (each read is sent alone).
	lanes *lanes.Lanes[idemstore.AcquireRequest, readReply]
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
)

// WithTable sets the records' table: "name" or "schema.name", each part a
// plain identifier. The default is [DefaultTable]. A name that is not valid
// makes every call of the store fail with an error that says so.
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

// WithMaxClaiming sets how many acquires (AcquireRun: the read, and the
// claim, which waits for a connection of the pool) may be under way at
// once; one more is refused at once with an error matching
// [idemstore.ErrStoreUnavailable] (the engine answers 503 with
// Retry-After), rather than queueing for a connection until the store
// timeout. The default is 32 times the pool's MaxConns: a burst of 20 times
// the pool's size queues for connections (the queue drains at the pool's
// rate, each waiter holding nothing meanwhile), and what is beyond it is
// refused without delay. Set it to about the store timeout times the
// pool's rate of first requests, so that what is admitted is served in
// time. n <= 0 keeps the default.
func WithMaxClaiming(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxClaiming = int64(n)
		}
	}
}

// WithReadLanes sets how many round trips of reads AcquireRun keeps in
// flight at once before it batches the reads that come meanwhile
// (readbatch.go): a read that finds a lane free is sent at once, alone;
// while every lane waits for the server, the reads that come are sent
// together by the next free lane, each still its own read-only statement,
// sharing one round trip. Batched, a replay costs the database about half
// of what a read of its own does (BENCHMARKS.md), which matters most in a
// storm of retries. The default is GOMAXPROCS: the lanes' server processes
// then keep up with what this process's CPUs can send. n < 0 sends every
// read in a round trip of its own; n == 0 keeps the default.
func WithReadLanes(n int) Option {
	return func(s *Store) { s.core.SetReadLanes(n) }
}

// WithPurgeBatch sets how many expired records one purge statement deletes
// (default [DefaultPurgeBatch]); n <= 0 keeps the default.
func WithPurgeBatch(n int) Option {
	return func(s *Store) { s.core.SetPurgeBatch(n) }
}

// New returns a store on pool configured by opts. The table must exist
// (apply [Schema] with your migrations, or call [Store.CreateSchema]); see
// [Store.Check] for a readiness probe. From its first acquire the store
// purges expired records in the background until [Store.Close].
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool}
	s.core = sqlfamily.NewStore[*runTx](&dialect, (*ops)(s))
	if pool != nil {
		s.maxClaiming = 32 * int64(pool.Config().MaxConns)
	}
	sqlfamily.Apply(s, opts)
	s.lanes = s.newReadLanes(s.core.ReadLanes())
	s.abandonedMS = s.core.Abandoned()
	s.sql = newStatements(s.core.Table.Quoted)
	s.steps = newStepStatements(s.core.Table)
	return s
}

// Close stops the background purge and waits for a purge in flight. It does
// not close the pool.
func (s *Store) Close() { s.core.Close() }

// Acquire implements [idemstore.Store]. A zero req.Lease means [idemstore.DefaultLease].
//
// A table the store cannot complete on is refused before anything runs:
// the store runs [Store.Check] before its first acquire and every 30 s
// after (every second while it fails), and a statement of its own that the
// table refuses (a value too long, a NOT NULL or CHECK constraint, a
// trigger that raised) counts as a failed Check. Meanwhile Acquire returns
// the error matching [idemstore.ErrStoreMisconfigured] that says what to change,
// which the engine answers 503 store-misconfigured without running the
// handler.
//
// One round trip: an INSERT ... ON CONFLICT DO UPDATE creates an absent or
// expired record (fence 1) or takes over an in-progress one whose lease has
// lapsed (fence + 1), and otherwise leaves the row as it is but locked; a
// SELECT in the same implicit transaction then reads what the row holds
// (replay, mismatch, or the remaining lease of a conflict).
func (s *Store) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	return s.core.Acquire(ctx, req)
}

// ops is the store as its core drives it (sqlfamily.Driver): what its
// methods send to the database.
type ops Store

// Acquire is [Store.Acquire]'s batch.
func (o *ops) Acquire(ctx context.Context, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, error) {
	b := &pgx.Batch{}
	b.Queue("SELECT " + durable) // in the batch's implicit transaction
	b.Queue(o.sql.acquire, req.Key, req.Fingerprint, req.Token, lease, o.abandonedMS)
	b.Queue(o.sql.read, req.Key, req.Fingerprint)
	br := o.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var acq idemstore.Acquisition
	if err == nil {
		acq, err = readAcquire(br)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return idemstore.Acquisition{}, o.core.Refused("acquire", dialect.StoreError("acquire", err))
	}
	return acq, nil
}

// readAcquire decides the acquisition from the replies of the acquire
// batch.
func readAcquire(br pgx.BatchResults) (idemstore.Acquisition, error) {
	var fence int64
	err := br.QueryRow().Scan(&fence)
	switch {
	case err == nil:
		if _, err := br.Exec(); err != nil { // the read, not needed
			return idemstore.Acquisition{}, err
		}
		return sqlfamily.Claimed(fence, fence > 1), nil
	case !errors.Is(err, pgx.ErrNoRows):
		return idemstore.Acquisition{}, err
	}
	acq, _, err := scanRecord(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
		// Expired between the two statements (the retry will create it),
		// or claimed by a run whose transaction is open.
		return sqlfamily.Moment(), nil
	}
	return acq, err
}

// Complete implements [idemstore.Store]: it stores rec if token still owns the
// in-progress record (its lease may have lapsed, as long as no other
// attempt took it over), durably whatever the server's synchronous_commit.
// The engine calls it only for a store that is not an [idemstore.TxStore];
// pgstore's runs complete through [idemstore.RunTx.Commit].
func (s *Store) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	return s.core.Complete(ctx, key, token, rec, retention)
}

// Complete is [Store.Complete]'s batch: the completion, durable.
func (o *ops) Complete(ctx context.Context, key, token string, rec *idemstore.Record, ms int64) (int64, error) {
	header := headerjson.Encode(rec.Header)
	b := &pgx.Batch{}
	b.Queue("SELECT " + durable) // in the batch's implicit transaction
	b.Queue(o.sql.complete, key, token, 0, ms, rec.Status, header, rec.Body, rec.BodyOmitted)
	br := o.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

// Release implements [idemstore.Store].
func (s *Store) Release(ctx context.Context, key, token string) error {
	return s.core.Release(ctx, key, token)
}

// Release is [Store.Release]'s statement.
func (o *ops) Release(ctx context.Context, key, token string) (int64, error) {
	tag, err := o.pool.Exec(ctx, o.sql.release, key, token)
	return tag.RowsAffected(), err
}

// Extend implements [idemstore.Store].
func (s *Store) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	return s.core.Extend(ctx, key, token, lease)
}

// Extend is [Store.Extend]'s statement.
func (o *ops) Extend(ctx context.Context, key, token string, ms int64) (int64, error) {
	tag, err := o.pool.Exec(ctx, o.sql.extend, key, token, ms, o.abandonedMS)
	return tag.RowsAffected(), err
}

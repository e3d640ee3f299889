package pgstore

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/headerjson"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// claimTries bounds the read-then-claim rounds of one AcquireRun: a claim
// finds a live record only when one committed between its read and its
// claim, and the next read answers from it.
const claimTries = 3

// errBusy refuses an acquire while as many as the store allows are under
// way (WithMaxClaiming).
var errBusy = errors.New("busy: as many acquires as the store allows are waiting for a connection of the pool; retry later")

// txKey is the context key of a run's transaction.
type txKey struct{}

// Tx returns the transaction of the protected run whose context ctx is (or
// derives from), or nil outside one: in a handler that runs without a key,
// one that runs unprotected (fail-open), or one on another store. The
// handler's statements in it commit together with the claim and the stored
// response, or not at all. The handler must not commit or roll it back (its
// Commit and Rollback return an error): the engine does. A statement that
// would end it (COMMIT, ROLLBACK, END, ABORT, PREPARE TRANSACTION) is not
// sent: it returns an error matching idemstore.ErrTxEnded, and the run is
// rolled back and answered 500 transaction-ended. Begin makes a
// savepoint, as pgx's.
func Tx(ctx context.Context) pgx.Tx {
	tx, _ := idemstore.Value(ctx, txKey{}).(pgx.Tx)
	return tx
}

// AcquireRun implements [idemstore.TxStore]: the key is claimed inside the
// run's transaction, which commits once, with the handler's writes and the
// record.
//
// A read-only SELECT answers a replay, a mismatch, or a conflict with a
// record that [Store.Acquire] committed (no row lock, no transaction id,
// nothing written: one round trip). Otherwise BEGIN, the settings and the
// claim go in one round trip on a connection of the pool, which the run
// holds until it commits or rolls back: the claim tries the key's advisory
// lock (pg_try_advisory_xact_lock of a hash of the table and key) and,
// holding it, reads the key's row again, writing nothing (the record is
// written once, completed, with the COMMIT); a duplicate finds the lock
// taken and is answered a conflict at once, with a Remaining of one
// second. The transaction is READ
// COMMITTED whatever the database's default, commits durably (its
// synchronous_commit is on when the server's is off), and is ended by the
// server once its owner has sent nothing for req.Lease
// (idle_in_transaction_session_timeout), which is what bounds a frozen
// owner; a live one keeps it (KeepAlive) for as long as its handler runs.
// The claim's fence is the transaction's id.
func (s *Store) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	return s.core.AcquireRun(ctx, req)
}

// AcquireRun is [Store.AcquireRun]'s read and claim.
func (o *ops) AcquireRun(ctx context.Context, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, idemstore.RunTx, error) {
	s := (*Store)(o)
	if s.heldHere(req.Key) {
		// A run of this store holds (or is taking) the key's claim, less
		// than its lease ago, so still held whatever its owner does: a
		// conflict, without a round trip. (An older one may have been
		// ended by the server: ask it.)
		return dialect.Held(lease), nil, nil
	}
	if n := s.claiming.Add(1); s.maxClaiming > 0 && n > s.maxClaiming {
		s.claiming.Add(-1)
		return idemstore.Acquisition{}, nil, &idemstore.StoreError{Op: "acquire", Err: errBusy}
	}
	defer s.claiming.Add(-1)
	for try := 1; ; try++ {
		acq, lapsed, found, shared, err := s.readShared(ctx, req)
		switch {
		case shared && err == nil && (!found || lapsed):
			// Another acquire of the key read with this one and claims it.
			return dialect.Held(lease), nil, nil
		case err != nil:
			return idemstore.Acquisition{}, nil, s.core.Refused("acquire", dialect.StoreError("acquire", err))
		case found && !lapsed:
			return acq, nil, nil
		}
		// One claim at a time per key from this store: a duplicate that
		// read no record either is answered a conflict here, sparing the
		// claim's round trips.
		taking := &runTx{key: req.Key, claimed: time.Now(), lease: time.Duration(lease) * time.Millisecond}
		if prev, loaded := s.open.LoadOrStore(req.Key, taking); loaded {
			if p := prev.(*runTx); time.Since(p.claimed) < p.lease {
				return dialect.Held(lease), nil, nil
			}
			s.open.Store(req.Key, taking) // an old claim the server may have ended: try
		}
		acq, tx, err := s.claim(ctx, req, lease, lapsed)
		if tx == nil {
			s.open.CompareAndDelete(req.Key, taking)
		}
		if err != nil || tx != nil || acq.Outcome == idemstore.OutcomeConflict || try == claimTries {
			if err == nil && tx == nil && acq.Outcome != idemstore.OutcomeConflict {
				acq = idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: sqlfamily.OpenClaimWait}
			}
			return acq, tx, err
		}
		// A live record committed between the read and the claim: read it.
	}
}

// reading is a read of a key under way, which concurrent acquires of the
// same key share (readShared).
type reading struct {
	done   chan struct{}
	fp     string // the reader's fingerprint: only acquires with the same one share
	acq    idemstore.Acquisition
	lapsed bool
	found  bool
	err    error
}

// readShared is read, shared by the acquires of one key with one
// fingerprint that come while it is under way: one round trip for a burst
// of duplicates. shared is true for those that got another's read; a
// replay's record is copied for each.
func (s *Store) readShared(ctx context.Context, req idemstore.AcquireRequest) (acq idemstore.Acquisition, lapsed, found, shared bool, err error) {
	mine := &reading{done: make(chan struct{}), fp: req.Fingerprint}
	if v, loaded := s.reads.LoadOrStore(req.Key, mine); loaded {
		if r := v.(*reading); r.fp == req.Fingerprint {
			select {
			case <-r.done:
			case <-ctx.Done():
				return idemstore.Acquisition{}, false, false, true, ctx.Err()
			}
			if r.err != nil && ctx.Err() == nil && (errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded)) {
				// The read ended with its reader's context, not this
				// one's: read again.
				acq, lapsed, found, err = s.read(ctx, req)
				return acq, lapsed, found, false, err
			}
			acq = r.acq
			if acq.Record != nil {
				rec := *acq.Record
				rec.Header, rec.Body = rec.Header.Clone(), bytes.Clone(rec.Body)
				acq.Record = &rec
			}
			return acq, r.lapsed, r.found, true, r.err
		}
		acq, lapsed, found, err = s.read(ctx, req) // another payload: a read of its own
		return acq, lapsed, found, false, err
	}
	mine.acq, mine.lapsed, mine.found, mine.err = s.read(ctx, req)
	s.reads.CompareAndDelete(req.Key, mine)
	close(mine.done)
	return mine.acq, mine.lapsed, mine.found, false, mine.err
}

// read is AcquireRun's read-only look at the key's record: found is false
// when there is none (or it expired), lapsed true for an in-progress record
// whose lease has lapsed (a claim takes it over); otherwise acq is the
// answer. It goes through the read lanes (readbatch.go); with none kept
// (WithReadLanes below zero), each read goes alone.
func (s *Store) read(ctx context.Context, req idemstore.AcquireRequest) (acq idemstore.Acquisition, lapsed, found bool, err error) {
	r, err := s.lanes.Do(ctx, req)
	return r.acq, r.lapsed, r.found, err
}

// readOne is read in a round trip of its own.
func (s *Store) readOne(ctx context.Context, req idemstore.AcquireRequest) (acq idemstore.Acquisition, lapsed, found bool, err error) {
	return replyOf(scanRecord(s.pool.QueryRow(ctx, s.sql.read, req.Key, req.Fingerprint)))
}

// scanRecord decides the answer of a request from row, a reply of the
// read statement with the request's fingerprint; lapsed reports an
// in-progress record of the request whose lease lapsed.
func scanRecord(row pgx.Row) (acq idemstore.Acquisition, lapsed bool, err error) {
	// One value that escapes to Scan, not one per column (each of its pointers
	// would move its own variable to the heap).
	var v struct {
		r      sqlfamily.Row
		status *int32
		left   pgtype.Interval
	}
	if err := row.Scan(&v.r.SameFingerprint, &v.r.Completed, &v.status, &v.r.Header, &v.r.Body, &v.r.BodyOmitted, &v.left); err != nil {
		return idemstore.Acquisition{}, false, err
	}
	if v.status != nil {
		v.r.Status, v.r.HasStatus = *v.status, true
	}
	// lease_until - statement_timestamp(): days and microseconds (the
	// server folds whole days of hours into days; no months).
	v.r.Left = time.Duration(v.left.Days)*24*time.Hour + time.Duration(v.left.Microseconds)*time.Microsecond
	return v.r.Answer()
}

// claim begins the run's transaction with the claim, in one round trip. It
// returns the open run (FirstRun, or Recovered when the read found a lapsed
// lease), a conflict when another open claim holds the key's lock, or,
// with a nil run and a zero acquisition, that a live record committed since
// the read.
func (s *Store) claim(ctx context.Context, req idemstore.AcquireRequest, lease int64, lapsed bool) (idemstore.Acquisition, idemstore.RunTx, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return idemstore.Acquisition{}, nil, dialect.StoreError("acquire", err)
	}
	sent := time.Now() // the claim is taken after it
	b := &pgx.Batch{}
	b.Queue(s.sql.begin)
	b.Queue(s.sql.settings, req.Key, strconv.FormatInt(min(lease, 1<<31-1), 10))
	b.Queue(s.sql.claim, req.Key, req.Fingerprint)
	br := c.Conn().SendBatch(ctx, b)
	var locked bool
	var fence, xid int64
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&locked, nil, nil)
	}
	if err == nil {
		err = br.QueryRow().Scan(&fence, &xid)
	}
	if cerr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) {
		if cerr != nil {
			err = cerr
		}
	}
	if err == nil {
		r := &runTx{s: s, c: c, tx: connTx{conn: c.Conn()}, key: req.Key, fp: req.Fingerprint, token: req.Token, fence: fence, xid: xid, pid: c.Conn().PgConn().PID(), claimed: sent, lease: time.Duration(lease) * time.Millisecond}
		s.core.Runs.Add(req.Key, req.Token, r)
		s.open.Store(req.Key, r) // in place of the marker AcquireRun stored
		return sqlfamily.Claimed(fence, lapsed), r, nil
	}
	endConn(ctx, c)
	switch {
	case !errors.Is(err, pgx.ErrNoRows):
		return idemstore.Acquisition{}, nil, s.core.Refused("acquire", dialect.StoreError("acquire", err))
	case !locked:
		return dialect.Held(lease), nil, nil
	}
	return idemstore.Acquisition{}, nil, nil
}

// endConn rolls back what c's transaction holds, if anything, and returns
// c to the pool (which closes a connection that is broken or still in a
// transaction).
func endConn(ctx context.Context, c *pgxpool.Conn) {
	if c.Conn().PgConn().TxStatus() != 'I' && !c.Conn().IsClosed() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sqlfamily.LookupTimeout)
		_, _ = c.Conn().Exec(rctx, "ROLLBACK")
		cancel()
	}
	c.Release()
}

// runTx is one run's open transaction, which holds its key's claim.
type runTx struct {
	s          *Store
	c          *pgxpool.Conn // held until Commit or Rollback
	tx         connTx
	key, fp    string
	token      string
	fence, xid int64         // the claim's fence, and the transaction's id
	pid        uint32        // the backend's, which holds the key's lock (steps.go)
	claimed    time.Time     // just before the claim was sent
	lease      time.Duration // the claim's: the server ends it once idle this long
	mu         sync.Mutex
	done       bool // committed or rolled back: c is back in the pool
}

var _ idemstore.LiveRunTx = (*runTx)(nil)

// Fingerprint is the fingerprint of the request the run runs
// (sqlfamily.Run).
func (r *runTx) Fingerprint() string { return r.fp }

// Context implements [idemstore.RunTx].
func (r *runTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, pgx.Tx(&r.tx))
}

// KeepAlive implements [idemstore.LiveRunTx]: an empty statement on the
// run's connection, unless a statement of the handler's holds it, resets
// the server's clock of the transaction's idleness
// (idle_in_transaction_session_timeout). A connection the server closed (it
// ended the transaction) is a lost claim.
func (r *runTx) KeepAlive(ctx context.Context) error {
	conn := r.c.Conn().PgConn()
	var closed bool // read under the turn: the handler may use conn after it
	_, err := r.tx.turn.Try(func() error {
		err := conn.Ping(ctx)
		closed = err != nil && conn.IsClosed()
		return err
	})
	return dialect.KeptAlive(err, closed)
}

// Commit implements [idemstore.RunTx]: the completion (checked to update
// the claim's own row, or the COMMIT after it is not run) and COMMIT, in
// one round trip.
//
// A transaction that the server ended (the owner was idle past its lease:
// a frozen owner's) commits nothing: ErrNotOwner. A run whose handler sent
// a statement that ends the transaction (refused, unsent: connTx.take) is
// rolled back, and one whose handler ended it after all (the connection is
// idle: its transaction status says so without a round trip) gets no
// record; both return an error matching idemstore.ErrTxEnded. A COMMIT that fails
// without a server's answer (the connection broke, or ctx ended while the
// server was still committing) is looked up on another connection and a
// context of its own (at most 10 s), by the transaction's id (waiting for
// the key's lock while it is still in progress), and nil is returned if it
// committed.
//
// A transaction that a failed statement of the handler's has aborted (a
// unique violation the handler answered 422, say) can commit nothing: it
// is rolled back, and the result is stored on its own, in a transaction
// that holds the key's lock, unless another claim committed a live record
// meanwhile (ErrNotOwner).
func (r *runTx) Commit(ctx context.Context, rec *idemstore.Record, retention time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return dialect.StoreError("commit", pgx.ErrTxClosed)
	}
	r.done = true
	defer r.s.forget(r)
	switch conn := r.c.Conn().PgConn(); {
	case r.tx.refused:
		// The handler tried to end the transaction: nothing of the run
		// commits, and no record is written for it.
		endConn(ctx, r.c)
		return errEndRefused
	case conn.TxStatus() == 'I' && !conn.IsClosed():
		// A statement of the handler's ended the transaction after all
		// (behind another one): what it did is what that end made of
		// it, and no record is written for it. The connection is idle:
		// back to the pool.
		r.c.Release()
		return errEndedByHandler
	}
	ret, err := r.s.core.CheckComplete(r.key, r.token, rec, retention)
	if err != nil {
		endConn(ctx, r.c)
		return err
	}
	header := headerjson.Encode(rec.Header)
	b := &pgx.Batch{}
	b.Queue(r.s.sql.completeClaim, r.key, r.fp, r.token, r.fence, ret, rec.Status, header, rec.Body, rec.BodyOmitted)
	b.Queue("COMMIT")
	br := r.c.Conn().SendBatch(ctx, b)
	_, completeErr := br.Exec()
	var commitErr error
	if completeErr == nil {
		_, commitErr = br.Exec()
	}
	if cerr := br.Close(); completeErr == nil && commitErr == nil {
		commitErr = cerr
	}
	if completeErr == nil && commitErr == nil {
		r.c.Release()
		return nil
	}
	var pe *pgconn.PgError
	switch {
	case completeErr != nil && errors.As(completeErr, &pe):
		endConn(ctx, r.c)
		switch {
		case pe.Code == "25P02": // in_failed_sql_transaction: the handler's
			return r.s.storeAlone(ctx, r, rec, header, ret)
		case pe.Code == "22012": // division_by_zero: the row is not the claim's
			return idemstore.ErrNotOwner
		case pe.Code == "25P03" || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03":
			// The server ended the session (idle in transaction past the
			// lease, shut down) before the completion: nothing committed,
			// and the claim is gone with the transaction.
			return idemstore.ErrNotOwner
		}
		return r.s.core.Refused("complete", dialect.StoreError("complete", completeErr))
	case completeErr != nil && r.c.Conn().IsClosed() && !sent(completeErr):
		// The connection was gone before the batch was sent: closed by
		// the server after it ended the transaction (idle past the lease),
		// or broken.
		r.c.Release()
		return idemstore.ErrNotOwner
	case commitErr != nil && (errors.As(commitErr, &pe) || errors.Is(commitErr, pgx.ErrTxCommitRollback)):
		// The server answered the COMMIT: it rolled back (a serialization
		// failure, a deferred constraint of the handler's).
		endConn(ctx, r.c)
		return dialect.StoreError("commit", commitErr)
	}
	// No answer: the transaction may have committed. Look it up.
	r.c.Release()
	return dialect.LostCommit(ctx, errors.Join(completeErr, commitErr), func(ctx context.Context) (bool, error) {
		return r.s.lookup(ctx, r.key, r.xid)
	})
}

// sent reports whether err, an error of a statement of a batch, may have
// come after the batch reached the server.
func sent(err error) bool { return !pgconn.SafeToRetry(err) }

// Rollback implements [idemstore.RunTx].
func (r *runTx) Rollback(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	r.done = true
	r.s.forget(r)
	conn := r.c.Conn()
	if conn.IsClosed() {
		r.c.Release() // the server rolled back with the connection
		return nil
	}
	_, err := conn.Exec(ctx, "ROLLBACK")
	broke := err != nil && conn.IsClosed() // read before c goes back to the pool
	r.c.Release()
	return dialect.RolledBack(err, broke)
}

// heldHere reports whether a run of this store holds or is taking key's
// claim, begun less than its lease ago.
func (s *Store) heldHere(key string) bool {
	r, ok := s.open.Load(key)
	return ok && time.Since(r.(*runTx).claimed) < r.(*runTx).lease
}

// forget drops run r, which is over, from the store's open runs.
func (s *Store) forget(r *runTx) {
	s.core.Runs.Drop(r.key, r.token, r)
	s.open.CompareAndDelete(r.key, r)
}

// storeAlone stores rec for run r, whose transaction the handler's failed
// statement aborted (rolled back by now), in a transaction of its own.
func (s *Store) storeAlone(ctx context.Context, r *runTx, rec *idemstore.Record, header []byte, ret int64) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return dialect.StoreError("complete", err)
	}
	b := &pgx.Batch{}
	b.Queue(s.sql.begin)
	b.Queue(s.sql.settings, r.key, "0")
	b.Queue(s.sql.store, r.key, r.fp, r.token, r.fence, ret, rec.Status, header, rec.Body, rec.BodyOmitted)
	b.Queue("COMMIT")
	br := c.Conn().SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	var stored bool
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		stored = tag.RowsAffected() == 1
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	endConn(ctx, c)
	switch {
	case err != nil:
		return s.core.Refused("complete", dialect.StoreError("complete", err))
	case !stored:
		return idemstore.ErrNotOwner
	}
	return nil
}

// lookup tells whether the transaction xid, which claimed key, committed:
// it asks the server for the transaction's status, and while it is in
// progress (committing) waits for it to end, on the key's lock.
func (s *Store) lookup(ctx context.Context, key string, xid int64) (bool, error) {
	var status *string
	if err := s.pool.QueryRow(ctx, s.sql.xactStatus, xid).Scan(&status); err != nil {
		return false, err
	}
	if status != nil && *status == "in progress" {
		b := &pgx.Batch{}
		b.Queue(s.sql.waitXact, key)
		b.Queue(s.sql.xactStatus, xid)
		br := s.pool.SendBatch(ctx, b)
		_, err := br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&status)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, err
		}
	}
	switch {
	case status == nil:
		return false, errors.New("the transaction's status is no longer kept")
	case *status == "in progress":
		return false, errors.New("the transaction is still in progress")
	}
	return *status == "committed", nil
}

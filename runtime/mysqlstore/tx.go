package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// txKey is the context key of a run's (or a step's) transaction.
type txKey struct{}

// Tx returns the transaction of the protected run whose context ctx is (or
// derives from), or nil outside one: in a handler that runs without a key,
// one that runs unprotected (fail-open), or one on another store. The
// handler's statements in it commit together with the key's claim and the
// stored response, or not at all. The engine commits or rolls it back:
// its Commit and Rollback refuse (see [Transaction]).
func Tx(ctx context.Context) *Transaction {
	tx, _ := idemstore.Value(ctx, txKey{}).(*Transaction)
	return tx
}

// begin opens a READ COMMITTED transaction on a connection of the pool,
// for a step or a purge. database/sql rolls a transaction back when the
// context it began with ends, and ctx is bounded by the store timeout: the
// transaction gets a context of its own, which only ctx's end while BEGIN
// is under way cancels, and which end ends.
func (s *Store) begin(ctx context.Context) (tx *sql.Tx, end context.CancelFunc, err error) {
	txCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	tx, err = s.db.BeginTx(txCtx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if !stop() { // ctx ended meanwhile: the transaction may be rolled back already
		if err == nil {
			_ = tx.Rollback()
			err = ctx.Err()
		}
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return tx, cancel, nil
}

// AcquireRun implements [idemstore.TxStore]. A replay, a mismatch or a
// conflict with a committed in-progress record is answered by the acquire's
// one read-only statement, as [Store.Acquire] answers it. A key that is
// free to claim is claimed inside a new transaction, on a connection of the
// pool that the run holds until it commits or rolls back:
//
//   - one statement sets, for the connection's session, the
//     idle_transaction_timeout (MariaDB; wait_timeout on MySQL) to the
//     lease in whole seconds, rounded up, and READ COMMITTED as the
//     session's isolation: a frozen owner's transaction is ended by the
//     server once it has sent nothing for the lease, and the handler reads
//     what is committed when it reads, taking no gap locks (once per
//     connection and lock: see prepareSession);
//   - START TRANSACTION;
//   - the claim, an INSERT of the key's row (an INSERT ... ON DUPLICATE
//     KEY UPDATE where the row is there: see [Store.Acquire]) that does
//     not wait for a lock (SET STATEMENT
//     innodb_lock_wait_timeout=0 FOR, MariaDB; on MySQL the session's
//     innodb_lock_wait_timeout, see noWait): a row another open claim
//     holds refuses it at once, which is a conflict, answered with a
//     Remaining of a second.
//
// The claim's fence is the database's clock in microseconds since 1970
// (and above the fence of the committed record it takes over), so that it
// is above every earlier claim's of the key, rolled back or not, as long
// as the server's clock does not step back by more than the time between
// two claims.
func (s *Store) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	return s.core.AcquireRun(ctx, req)
}

// AcquireRun is [Store.AcquireRun]'s read and claim.
func (o *ops) AcquireRun(ctx context.Context, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, idemstore.RunTx, error) {
	s := (*Store)(o)
	for attempt := 0; ; attempt++ {
		acq, how, err := s.read(ctx, req.Key, req.Fingerprint)
		if err != nil || how == answered {
			return acq, nil, err
		}
		run, fence, err := s.claim(ctx, req, lease, how)
		switch {
		case err != nil:
			return idemstore.Acquisition{}, nil, err
		case run != nil:
			return sqlfamily.Claimed(fence, acq.Outcome == idemstore.OutcomeRecovered), run, nil
		case fence < 0 || attempt > 0:
			// Held by another open claim, or claimed twice between two
			// reads: a conflict, which the engine's wait retries.
			return dialect.Held(lease), nil, nil
		}
		// Committed by another claim between the read and ours: read
		// what it holds now.
	}
}

// claim claims req's key in a new transaction (claimRow, as the read found
// how): the run that holds it and its fence; or no run and fence -1 when
// another open claim holds the key, 0 when a committed record took it
// meanwhile.
func (s *Store) claim(ctx context.Context, req idemstore.AcquireRequest, leaseUS int64, how claimHow) (*runTx, int64, error) {
	st, err := s.statements(ctx)
	if err != nil {
		return nil, 0, err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, 0, dialect.StoreError("acquire", err)
	}
	if err := s.prepareSession(ctx, conn, st.flavor, (leaseUS+999_999)/1_000_000); err != nil {
		_ = conn.Close()
		return nil, 0, s.core.Refused("acquire", dialect.StoreError("acquire", err))
	}
	txCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	tx, err := conn.BeginTx(txCtx, nil)
	if !stop() && err == nil { // ctx ended meanwhile: database/sql may have rolled back
		_ = tx.Rollback()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, 0, dialect.StoreError("acquire", err)
	}
	run := &runTx{s: s, conn: conn, tx: tx, end: cancel, key: req.Key, token: req.Token, fingerprint: req.Fingerprint, flavor: st.flavor, leaseUS: leaseUS}
	run.handler.tx = tx
	inTx := func(st *sql.Stmt, ctx context.Context, args ...any) (sql.Result, error) {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	res, err := claimRow(ctx, st.insertTx, st.claimTx, how, inTx, req.Key, req.Fingerprint, req.Token, leaseUS, leaseUS+s.abandonedUS)
	var fence int64
	if err == nil {
		fence, err = res.LastInsertId()
	}
	if err != nil || fence == 0 {
		run.close()
		var me *mysql.MySQLError
		switch {
		case errors.As(err, &me) && (me.Number == errLockWait || me.Number == errLockNoWait):
			return nil, -1, nil
		case err != nil:
			return nil, 0, s.core.Refused("acquire", dialect.StoreError("acquire", err))
		}
		return nil, 0, nil
	}
	run.fence = fence
	s.core.Runs.Add(req.Key, req.Token, run)
	return run, fence, nil
}

// prepareSession sets conn's session for a claim of lease secs (see
// flavor.session), unless the store set it so on this connection before:
// the store remembers, by the driver's connection, the timeout it last set
// there, so that a connection serving claims of one lock pays for the SET
// once. (A handler that changes those session variables itself on a pool
// connection defeats that.) The memory is cleared when it holds more
// connections than a pool plausibly has had, since database/sql does not
// say when one closes.
func (s *Store) prepareSession(ctx context.Context, conn *sql.Conn, f flavor, secs int64) error {
	var dc any
	if err := conn.Raw(func(driverConn any) error { dc = driverConn; return nil }); err != nil {
		return err
	}
	if v, ok := s.sessions.Load(dc); ok && v.(int64) == secs {
		return nil
	}
	if _, err := conn.ExecContext(ctx, f.session(secs)); err != nil {
		return err
	}
	if s.sessionCount.Add(1) > maxSessions {
		s.sessions.Clear()
		s.sessionCount.Store(0)
	}
	s.sessions.Store(dc, secs)
	return nil
}

// maxSessions bounds the store's memory of the sessions it set.
const maxSessions = 1024

// runTx is one run's transaction, which holds its key's claim.
type runTx struct {
	s           *Store
	conn        *sql.Conn
	tx          *sql.Tx
	handler     Transaction // tx as the handler has it (Tx)
	end         context.CancelFunc
	key         string
	token       string
	fingerprint string
	fence       int64
	flavor      flavor
	leaseUS     int64 // the claim's lease
	done        bool
}

var _ idemstore.LiveRunTx = (*runTx)(nil)

// Fingerprint is the fingerprint of the request the run runs
// (sqlfamily.Run).
func (r *runTx) Fingerprint() string { return r.fingerprint }

// Context implements [idemstore.RunTx].
func (r *runTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, &r.handler)
}

// KeepAlive implements [idemstore.LiveRunTx]: a statement on the run's
// connection, unless a statement of the handler's or its open rows hold it,
// resets the server's clock of the session's idleness
// (idle_transaction_timeout; MySQL's wait_timeout). A connection that is
// gone (the server ended the transaction) is a lost claim. See keepAlive
// for the statement.
func (r *runTx) KeepAlive(ctx context.Context) error {
	err := r.handler.keepAlive(func() error { return r.keepAlive(ctx) })
	return dialect.KeptAlive(err, err != nil && claimLost(err))
}

// keepAlive sends the keep-alive's statement. On MariaDB it asks whether
// the transaction is still open (in_transaction): one the handler ended
// with a COMMIT of its own left the claim committed as an in-progress
// record, whose lease the store then extends, autocommitted, so that no
// other run takes the key while this one runs (Commit fails the run and
// releases the key). MySQL has no in_transaction: there it pings
// (COM_PING).
func (r *runTx) keepAlive(ctx context.Context) error {
	if r.flavor == mySQL {
		return ping(ctx, r.conn)
	}
	var open bool
	if err := r.tx.QueryRowContext(ctx, "SELECT @@in_transaction = 1").Scan(&open); err != nil || open {
		return err
	}
	_, err := r.tx.ExecContext(ctx, r.s.sql.extend, r.leaseUS, r.leaseUS+r.s.abandonedUS, r.key, r.token)
	return err
}

// close ends the run's hold on its connection (after COMMIT or ROLLBACK, or
// to roll back), returning it to the pool, or discarding it when broken.
func (r *runTx) close() {
	_ = r.tx.Rollback() // nothing after COMMIT
	r.end()
	_ = r.conn.Close()
	r.s.core.Runs.Drop(r.key, r.token, r)
	r.done = true
}

// ping sends COM_PING on conn, which holds an open transaction. It does not
// use conn.PingContext: a ping that fails with driver.ErrBadConn makes
// database/sql close the connection, which waits for the transaction to
// end, and so would wait for ever under the run's own keep-alive. The
// error is returned as a plain one instead; the transaction finds the
// connection gone at its next statement.
func ping(ctx context.Context, conn *sql.Conn) error {
	var failed error
	err := conn.Raw(func(dc any) error {
		if p, ok := dc.(driver.Pinger); ok {
			failed = p.Ping(ctx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if failed != nil {
		return fmt.Errorf("ping: %s", failed)
	}
	return nil
}

// Commit implements [idemstore.RunTx]: the completion's UPDATE of the
// claimed row, then COMMIT: the claim, the handler's writes and the record
// become visible at once. A transaction the server ended (a frozen owner's,
// past its idle_transaction_timeout; a deadlock of the handler's) commits
// nothing and returns [idemstore.ErrNotOwner]. A COMMIT that fails without
// a server's answer (the connection broke) is looked up on another
// connection and a context of its own (at most 10 s): the lookup waits for
// the row's lock, so it sees the transaction's end, and nil is returned if
// it committed.
//
// database/sql's COMMIT takes no context: it is bounded by the driver's
// readTimeout and writeTimeout (DSN parameters), not by ctx.
func (r *runTx) Commit(ctx context.Context, rec *idemstore.Record, retention time.Duration) error {
	if r.done {
		return idemstore.ErrNotOwner
	}
	defer r.close()
	st, err := r.s.statements(ctx)
	if err != nil {
		return err
	}
	us, err := r.s.core.CheckComplete(r.key, r.token, rec, retention)
	if err != nil {
		return err
	}
	n, err := r.s.complete(ctx, r.tx.StmtContext(ctx, st.completeTx).ExecContext, r.key, r.token, r.fence, rec, us)
	switch err = r.s.core.Changed("complete", n, err); {
	case errors.Is(err, idemstore.ErrNotOwner):
		return r.unguarded(ctx, st.flavor, err)
	case err != nil && claimLost(err):
		return idemstore.ErrNotOwner // the server ended the transaction
	case err != nil:
		return err
	}
	err = r.tx.Commit()
	if err == nil {
		return nil
	}
	if me := (*mysql.MySQLError)(nil); errors.As(err, &me) && !claimLost(err) {
		// The server answered: it rolled back.
		return dialect.StoreError("commit", err)
	}
	// No answer: the transaction may have committed. The lookup waits
	// for the row's lock, so it ends when the committing transaction does.
	return dialect.LostCommit(ctx, err, func(ctx context.Context) (bool, error) {
		return r.s.lookup(ctx, r.key, r.token)
	})
}

// claimLost reports whether err, an error of a statement in the run's
// transaction, says the transaction is gone: the connection broke or the
// server ended it.
func claimLost(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return true // no answer from the server: the connection is gone, and its transaction with it
	}
	switch me.Number {
	case errConnKilled, errIdleKilled, errShutdown:
		return true
	}
	return false
}

// Rollback implements [idemstore.RunTx]: the transaction is rolled back,
// and the claim with it.
func (r *runTx) Rollback(context.Context) error {
	if r.done {
		return nil
	}
	err := r.tx.Rollback()
	r.close()
	return dialect.RolledBack(err, err != nil && (errors.Is(err, sql.ErrTxDone) || claimLost(err)))
}

// lookup tells whether token's completion of key is committed.
func (s *Store) lookup(ctx context.Context, key, token string) (bool, error) {
	var committed bool
	err := s.db.QueryRowContext(ctx, s.sql.lookup, token, key).Scan(&committed)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return committed, err
}

// flavor is the server's kind, which a few statements differ by.
type flavor int

const (
	mariaDB flavor = iota
	mySQL
)

// session is the statement that prepares a connection's session for
// claims of lease secs: the idle timeout that fences a frozen owner, and
// READ COMMITTED as the session's isolation (it stays set on the pool's
// connection, as the SET is made once per connection).
func (f flavor) session(secs int64) string {
	n := strconv.FormatInt(max(secs, 1), 10)
	if f == mySQL {
		return "SET SESSION wait_timeout = " + n + ", SESSION transaction_isolation = 'READ-COMMITTED'"
	}
	return "SET SESSION idle_transaction_timeout = " + n + ", SESSION tx_isolation = 'READ-COMMITTED'"
}

package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// lookupTimeout bounds the lookup of a COMMIT whose answer was lost: it
// waits for the committing transaction to end, which a slow COMMIT (a
// synchronous replica, a deferred trigger) can make longer than the store
// timeout the COMMIT itself had.
const lookupTimeout = 10 * time.Second

// txKey is the context key of a run's transaction.
type txKey struct{}

// Tx returns the transaction of the protected run whose context ctx is (or
// derives from), or nil outside one: in a handler that runs without a key,
// one that runs unprotected (fail-open), or one on another store. The
// handler's statements in it commit together with the stored response, or
// not at all. The handler must not commit or roll it back: the engine does.
func Tx(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(txKey{}).(pgx.Tx)
	return tx
}

// AcquireRun implements [idemstore.TxStore]: [Store.Acquire], then, for a
// claim, the run's transaction on a connection of the pool, which it holds
// until the run commits or rolls back (and a rollback releases the lease).
// The transaction is READ COMMITTED whatever the database's default: the
// completion's UPDATE must see the record's row as it is, which REPEATABLE
// READ and SERIALIZABLE refuse (could not serialize access). A handler that
// needs a stronger guarantee for its own rows locks them (SELECT ... FOR
// UPDATE).
func (s *Store) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	acq, err := s.Acquire(ctx, req)
	if err != nil || (acq.Outcome != idemstore.OutcomeFirstRun && acq.Outcome != idemstore.OutcomeRecovered) {
		return acq, nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		_ = s.Release(context.WithoutCancel(ctx), req.Key, req.Token)
		return idemstore.Acquisition{}, nil, storeError("begin", err)
	}
	// The claim's fence is above every earlier claim's: the transaction's
	// id. The record keeps its own; the token checks the owner.
	if err := tx.QueryRow(ctx, `SELECT greatest(pg_current_xact_id()::text::bigint, $1::bigint)`, acq.Fence).Scan(&acq.Fence); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		_ = s.Release(context.WithoutCancel(ctx), req.Key, req.Token)
		return idemstore.Acquisition{}, nil, storeError("begin", err)
	}
	return acq, &runTx{s: s, tx: tx, key: req.Key, token: req.Token}, nil
}

// runTx is one run's transaction.
type runTx struct {
	s     *Store
	tx    pgx.Tx
	key   string
	token string
	fence int64
}

// Context implements [idemstore.RunTx].
func (r *runTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, r.tx)
}

// Commit implements [idemstore.RunTx]: the completion's UPDATE (owner and fence
// checked under the row lock it takes), then COMMIT. A refused completion
// rolls back. A COMMIT that fails without a server's answer (the
// connection broke, or ctx ended while the server was still committing) is
// looked up on another connection and a context of its own (at most 10 s):
// the lookup waits for the row's lock, so it sees the transaction's end,
// and nil is returned if it committed.
//
// A transaction that a failed statement of the handler's has aborted (a
// unique violation the handler answered 422, say) can commit
// nothing: it is rolled back, and the result is stored on its own, the
// owner and fence checked all the same.
func (r *runTx) Commit(ctx context.Context, rec *idemstore.Record, retention time.Duration) error {
	err := r.s.complete(ctx, r.tx, r.key, r.token, r.fence, rec, retention)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "25P02" { // in_failed_sql_transaction
		if rerr := r.tx.Rollback(ctx); rerr != nil {
			return storeError("rollback", rerr)
		}
		return r.s.complete(ctx, r.s.pool, r.key, r.token, r.fence, rec, retention)
	}
	if err != nil {
		_ = r.tx.Rollback(context.WithoutCancel(ctx))
		r.release(ctx)
		return err
	}
	err = r.tx.Commit(ctx)
	if err == nil {
		return nil
	}
	defer r.release(ctx) // owner-checked: undoes nothing that committed
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) || errors.Is(err, pgx.ErrTxCommitRollback) {
		// The server answered: it rolled back (a serialization failure, a
		// deferred constraint of the handler's).
		return storeError("commit", err)
	}
	// The lookup gets a context of its own: the COMMIT may have outlived
	// ctx's deadline (that is often why its answer was lost), and a lookup
	// on ctx would then fail at once without asking. It waits for the
	// row's lock, so it ends when the committing transaction does.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	committed, lerr := r.s.lookup(lctx, r.key, r.token)
	switch {
	case lerr != nil:
		return storeError("commit", errors.Join(err, errors.New("its outcome could not be looked up"), lerr))
	case committed:
		return nil
	}
	return storeError("commit", err)
}

// Rollback implements [idemstore.RunTx]: the transaction is rolled back and
// the lease released.
func (r *runTx) Rollback(ctx context.Context) error {
	err := r.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil // after Commit
	}
	r.release(ctx)
	if err == nil {
		return nil
	}
	return storeError("rollback", err)
}

// release releases the run's lease, once its transaction is over.
func (r *runTx) release(ctx context.Context) {
	_ = r.s.Release(context.WithoutCancel(ctx), r.key, r.token)
}

// lookup tells whether token's completion of key is committed.
func (s *Store) lookup(ctx context.Context, key, token string) (bool, error) {
	var committed bool
	err := s.pool.QueryRow(ctx, s.sql.lookup, key, token).Scan(&committed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return committed, err
}

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

// BeginRun implements [idemstore.TxStore]: it opens the run's transaction on a
// connection of the pool, which it holds until the run commits or rolls
// back. The transaction is READ COMMITTED whatever the database's default:
// the heartbeat updates the record while the handler runs, and the
// completion's UPDATE must see that row as it is, which REPEATABLE READ and
// SERIALIZABLE refuse (could not serialize access). A handler that needs a
// stronger guarantee for its own rows locks them (SELECT ... FOR UPDATE).
func (s *Store) BeginRun(ctx context.Context, key, token string, fence int64) (idemstore.RunTx, error) {
	if err := s.checkArgs(key, token); err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, storeError("begin", err)
	}
	return &runTx{s: s, tx: tx, key: key, token: token, fence: fence}, nil
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
		return err
	}
	err = r.tx.Commit(ctx)
	if err == nil {
		return nil
	}
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

// Rollback implements [idemstore.RunTx].
func (r *runTx) Rollback(ctx context.Context) error {
	err := r.tx.Rollback(ctx)
	if err == nil || errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return storeError("rollback", err)
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

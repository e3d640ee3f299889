package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// lookupTimeout bounds the lookup of a COMMIT whose answer was lost: it
// waits for the committing transaction to end, which a slow COMMIT (a
// flush that waits for the disk) can make longer than the store timeout
// the COMMIT itself had.
const lookupTimeout = 10 * time.Second

// txKey is the context key of a run's (or a step's) transaction.
type txKey struct{}

// Tx returns the transaction of the protected run whose context ctx is (or
// derives from), or nil outside one: in a handler that runs without a key,
// one that runs unprotected (fail-open), or one on another store. The
// handler's statements in it commit together with the stored response, or
// not at all. The handler must not commit or roll it back: the engine does.
func Tx(ctx context.Context) *sql.Tx {
	tx, _ := ctx.Value(txKey{}).(*sql.Tx)
	return tx
}

// begin opens a READ COMMITTED transaction on a connection of the pool,
// for a run or a step. database/sql rolls a transaction back when the
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

// BeginRun implements [idemstore.TxStore]: it opens the run's transaction
// on a connection of the pool, which it holds until the run commits or
// rolls back. The transaction is READ COMMITTED whatever the server's
// default (REPEATABLE READ, in InnoDB): the handler reads what is committed
// when it reads, and its locking statements take no gap locks that would
// make other transactions wait on rows that do not exist. A handler that
// needs a stronger guarantee for its own rows locks them (SELECT ... FOR
// UPDATE).
func (s *Store) BeginRun(ctx context.Context, key, token string, fence int64) (idemstore.RunTx, error) {
	if err := s.checkArgs(key, token); err != nil {
		return nil, err
	}
	tx, end, err := s.begin(ctx)
	if err != nil {
		return nil, storeError("begin", err)
	}
	return &runTx{s: s, tx: tx, end: end, key: key, token: token, fence: fence}, nil
}

// runTx is one run's transaction.
type runTx struct {
	s     *Store
	tx    *sql.Tx
	end   context.CancelFunc
	key   string
	token string
	fence int64
}

// Context implements [idemstore.RunTx].
func (r *runTx) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, r.tx)
}

// Commit implements [idemstore.RunTx]: the completion's UPDATE (owner and
// fence checked under the row lock it takes), then COMMIT. A refused
// completion rolls back. A COMMIT that fails without a server's answer (the
// connection broke) is looked up on another connection and a context of
// its own (at most 10 s): the lookup waits for the row's lock, so it sees
// the transaction's end, and nil is returned if it committed.
//
// database/sql's COMMIT takes no context: it is bounded by the driver's
// readTimeout and writeTimeout (DSN parameters), not by ctx.
func (r *runTx) Commit(ctx context.Context, rec *idemstore.Record, retention time.Duration) error {
	defer r.end()
	err := r.s.complete(ctx, r.tx, r.key, r.token, r.fence, rec, retention)
	if err != nil {
		_ = r.tx.Rollback()
		return err
	}
	err = r.tx.Commit()
	if err == nil {
		return nil
	}
	if me := (*mysql.MySQLError)(nil); errors.As(err, &me) {
		// The server answered: it rolled back.
		return storeError("commit", err)
	}
	// The lookup gets a context of its own: the COMMIT may have outlived
	// ctx's deadline, and a lookup on ctx would then fail at once without
	// asking. It waits for the row's lock, so it ends when the committing
	// transaction does.
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
func (r *runTx) Rollback(context.Context) error {
	defer r.end()
	err := r.tx.Rollback()
	if err == nil || errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return storeError("rollback", err)
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

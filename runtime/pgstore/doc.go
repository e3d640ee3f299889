// Package pgstore is an idemstore.Store on PostgreSQL, through pgx v5's pool,
// whose runs commit the handler's own database writes together with the
// stored response.
//
// Wiring:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	store := pgstore.New(pool)
//	defer store.Close()
//	if err := store.CreateSchema(ctx); err != nil { ... } // or apply pgstore.Schema
//	engine := idem.NewEngine(store)
//
// In a handler that runs under a key, [Tx] returns the run's transaction:
//
//	tx := pgstore.Tx(r.Context())
//	_, err := tx.Exec(ctx, `INSERT INTO payments ...`)
//
// The key is claimed inside that transaction ([Store.AcquireRun]): a
// read-only SELECT answers a replay, a mismatch or a conflict; otherwise
// BEGIN and the claim go in one round trip, the claim holding the key's
// advisory lock, so that a concurrent duplicate is answered 409 at once.
// The handler's statements run in it, and the completion goes with COMMIT:
// one commit per first request, durable whatever the server's
// synchronous_commit. The claim, the handler's writes and the stored
// response become visible together or not at all: a crash before the
// commit leaves nothing (PostgreSQL rolls back the dead connection's
// transaction, and the retry runs at once), a handler error, a status that
// is not stored, a panic or a request cancelled before the handler answered
// roll everything back (an answer whose client has gone commits all the
// same, for its retry to replay), and
// a frozen owner (a process stopped with its transaction open) holds the
// key for at most the operation's lock: the server then ends its
// transaction (idle_in_transaction_session_timeout), a retry claims the
// key, and the owner, when it wakes, commits nothing and its client is
// answered what the key stands for now. A live owner keeps the key for as
// long as its handler runs, however long it spends outside the database (a
// slow call to another system): while the handler runs, the engine sends an
// empty statement on the run's connection every third of the lock, taking
// turns with the handler's statements, so the server never sees a live
// run's transaction idle for the lock. What Tx cannot undo: a call to
// another system from the handler (an HTTP request, a message sent); the
// fence (idem.FromContext) and that system's own idempotency key cover it.
//
// A records table the store cannot complete on (a column of another type,
// a NOT NULL column it does not write, a trigger or constraint that can
// refuse its writes) is misconfigured: [Store.Check] says what to change,
// and the store refuses acquires with [idemstore.ErrStoreMisconfigured] (503
// store-misconfigured, no handler runs) until the table is fixed, rather
// than finding out at the completion, after the handler ran.
//
// Times are the database's (statement_timestamp()), never the application's.
// An expired record counts for nothing at once and is deleted by [Store.Purge],
// in bounded batches that every instance may run at once.
package pgstore

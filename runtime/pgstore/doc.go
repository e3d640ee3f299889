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
// The engine opens it after acquiring the key (the lease commits on its
// own, so a concurrent duplicate sees it), writes the completion into it
// with the owner and fence checked under the record's row lock, and commits
// before answering the client. The handler's writes and the stored response
// become visible together or not at all: a crash before the commit leaves
// neither (the retry after the lease runs once), a handler error, a status
// that is not stored, a panic or a cancelled request roll both back and
// release the lease, and a stale owner (its lease taken over while it was
// frozen) has its completion refused and its writes rolled back, its client
// answered what the key stands for now. What Tx cannot undo: a call to
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

// Package mysqlstore is an idemstore.Store on MySQL or MariaDB (InnoDB),
// through database/sql and github.com/go-sql-driver/mysql, whose runs
// commit the handler's own database writes together with the stored
// response.
//
// Wiring:
//
//	db, err := mysqlstore.OpenDB(os.Getenv("MYSQL_DSN")) // user:pass@tcp(host:3306)/db
//	store := mysqlstore.New(db)
//	defer store.Close()
//	if err := store.CreateSchema(ctx); err != nil { ... } // or apply mysqlstore.Schema
//	engine := idem.NewEngine(store)
//
// In a handler that runs under a key, [Tx] returns the run's transaction:
//
//	tx := mysqlstore.Tx(r.Context())
//	_, err := tx.ExecContext(ctx, `INSERT INTO payments ...`)
//
// The engine claims the key inside that transaction (AcquireRun: a
// duplicate meanwhile is answered 409 at once, never waiting for it),
// writes the completion into it, and commits before answering the client:
// the claim, the handler's writes and the stored response become visible
// together, in one commit, or not at all. A crash before the commit leaves
// nothing (the retry runs at once), a handler error, a status that is not
// stored, a panic or a request cancelled before the handler answered roll
// everything back (an answer whose client has gone commits all the same, for
// its retry to replay), and a
// frozen owner's transaction is ended by the server once idle for the
// operation's lock (idle_transaction_timeout), its writes rolled back and
// its client answered what the key stands for now. A live owner keeps the
// key for as long as its handler runs, however long it spends outside the
// database: while the handler runs, the engine sends a statement on the
// run's connection every third of the lock, taking turns with the
// handler's statements (see [Transaction]). What Tx cannot undo: a
// call to another system from the handler (an HTTP request, a message
// sent); the fence (idem.FromContext) and that system's own idempotency key
// cover it.
//
// A server or table the store cannot keep its promise on is misconfigured:
// a server that can lose acknowledged commits (innodb_flush_log_at_trx_commit
// other than 1, the binary log without sync_binlog = 1), one that rolls a
// whole transaction back on a lock wait timeout
// (innodb_rollback_on_timeout), a sql_mode that truncates instead of
// refusing, a max_allowed_packet below the largest stored response, a table
// that is not InnoDB, a key column of text (whose collation makes two keys
// one) or a primary key on a prefix of it, a column of another type, a
// trigger or constraint that can refuse its writes; and a DSN whose
// database, user or password the server refuses. [Store.Check] says what to change,
// and the store refuses acquires with [idemstore.ErrStoreMisconfigured] (503
// store-misconfigured, no handler runs) until it is fixed. The server's
// REPEATABLE READ default is no hazard: the store's transactions are READ
// COMMITTED. The durability settings can change while the store runs: each
// run's completion reads them in its own statement, and a run that would
// commit on a server that can lose it fails (its writes rolled back)
// instead of being answered. A handler that ends the run's transaction
// itself (a COMMIT or ROLLBACK sent as SQL) is found out the same way: its
// result is not stored, and its key is released.
//
// Times are the database's (UTC_TIMESTAMP(6)), never the application's. An
// expired record counts for nothing at once and is deleted by
// [Store.Purge], in bounded batches that every instance may run at once.
package mysqlstore

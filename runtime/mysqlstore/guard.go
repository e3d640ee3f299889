package mysqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// durable is true while the server keeps every commit it acknowledges
// through a crash: what Check requires of innodb_flush_log_at_trx_commit
// and sync_binlog. Both are global and can change while the store runs.
const durable = "@@global.innodb_flush_log_at_trx_commit = 1 AND (@@global.log_bin = 0 OR @@global.sync_binlog = 1)"

// guard is the condition the completion in the run's transaction ends with
// (Commit): the record is written only inside a transaction that is still
// open (MariaDB's in_transaction: a handler that sent COMMIT, ROLLBACK or a
// statement that commits implicitly ended the one the store began, and the
// completion would otherwise commit on its own) and while the server keeps
// its commits (durable). The values are the server's at the statement, read
// in its round trip: false, and the UPDATE changes nothing. MySQL has no
// in_transaction; there only durability is read.
func (f flavor) guard() string {
	if f == mySQL {
		return " AND " + durable
	}
	return " AND @@in_transaction = 1 AND " + durable
}

// guardState is the query of what guard reads: whether a transaction is
// open, whether the server keeps its commits.
func (f flavor) guardState() string {
	if f == mySQL {
		return "SELECT 1, " + durable
	}
	return "SELECT @@in_transaction = 1, " + durable
}

// errTxEnded is the failure of a run whose handler ended its transaction.
var errTxEnded = fmt.Errorf("mysqlstore: the handler ended the run's transaction itself (a COMMIT, a ROLLBACK, or a statement that commits implicitly, such as DDL, LOCK TABLES or SET autocommit = 1 after 0, sent through mysqlstore.Tx; or a deadlock, which the server rolls back): its result is not stored and its key is released, and what its statements did stays as that end made it; leave the end of the transaction to the engine (return the answer, or an error to roll back): %w", idemstore.ErrTxEnded)

// errNotDurable is the problem of a completion that found the server no
// longer keeping its commits.
const errNotDurable = "innodb_flush_log_at_trx_commit is no longer 1 (or the binary log is on and sync_binlog is no longer 1), changed while the store runs: a commit now can be lost in a crash, and its retry run the handler again, so the run was rolled back instead of answered; set it back to 1 (SET GLOBAL innodb_flush_log_at_trx_commit = 1, SET GLOBAL sync_binlog = 1), and in the server's configuration"

// unguarded is Commit's answer to a completion that changed no row (it
// found err, ErrNotOwner): the guard's or the owner's. It asks the run's
// connection what guard read: a transaction the handler ended (the
// completion wrote nothing, and the claim, if the handler's end committed
// it, is deleted, so that the key is free at once), a server that no
// longer keeps its commits (a misconfiguration: acquires are refused until
// Check finds it mended), or neither (the claim's row is not the run's:
// ErrNotOwner).
func (r *runTx) unguarded(ctx context.Context, f flavor, err error) error {
	var open, kept bool
	if qerr := r.tx.QueryRowContext(ctx, f.guardState()).Scan(&open, &kept); qerr != nil {
		if claimLost(qerr) {
			return idemstore.ErrNotOwner
		}
		return dialect.StoreError("commit", qerr)
	}
	if !open {
		if _, rerr := r.tx.ExecContext(ctx, r.s.sql.release, r.key, r.token); rerr != nil {
			return errors.Join(errTxEnded, dialect.StoreError("release", rerr))
		}
		return errTxEnded
	}
	if !kept {
		return r.s.core.Refused("commit", sqlfamily.Misconfigured("commit", errNotDurable))
	}
	return err
}

package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

var _ idemstore.StepStore = (*Store)(nil)

// StepsSchema is the SQL that creates the step journal's table beside the
// records' table of the default name, for a migration tool;
// [Store.CreateSchema] runs the same statements for the store's tables (the
// journal of table T is T_steps). One row per journaled step of a record's
// key: the fingerprint of the record it was written for (a record created
// anew for another payload does not see it), the step's result as JSON, and
// when it stops counting. A store whose runs call no [idemstore.Step] never
// reads or writes it.
const StepsSchema = `CREATE TABLE IF NOT EXISTS idem_records_steps (
	key          text        NOT NULL,
	name         text        NOT NULL,
	fingerprint  text        NOT NULL,
	result       bytea       NOT NULL,
	expires_at   timestamptz NOT NULL,
	PRIMARY KEY (key, name)
);
CREATE INDEX IF NOT EXISTS idem_records_steps_expires_at ON idem_records_steps (expires_at);
`

// stepStatements are the journal's SQL for one records' table.
type stepStatements struct {
	load, save, purge string
	// An open run's (its claim not committed): by the key and the
	// request's fingerprint, the owner checked by the advisory lock its
	// transaction's session holds.
	loadClaimed, saveClaimed string
}

func newStepStatements(t sqlfamily.Table) stepStatements {
	return stepStatements{
		// $1 key, $2 token. No row: token does not own an in-progress
		// record of key; else one row per step journaled for the record's
		// fingerprint, or one row of NULLs for none.
		load: fmt.Sprintf(`SELECT s.name, s.result FROM %[1]s r
LEFT JOIN %[2]s s ON s.key = r.key AND s.fingerprint = r.fingerprint AND s.expires_at > statement_timestamp()
WHERE r.key = $1 AND r.token = $2 AND NOT r.completed AND r.expires_at > statement_timestamp()`, t.Quoted, t.Steps),

		// $1 key, $2 token, $3 fence, $4 name, $5 result, $6 retention ms.
		// Journals the step if token and fence own the in-progress record,
		// checked under the record's row lock, which the statement holds
		// until its transaction (the step's) ends. The entry lives for the
		// retention and at least as long as the record.
		save: fmt.Sprintf(`WITH r AS (
	SELECT key, fingerprint, expires_at FROM %[1]s
	WHERE key = $1 AND token = $2 AND fence = $3 AND NOT completed AND expires_at > statement_timestamp()
	FOR UPDATE)
INSERT INTO %[2]s (key, name, fingerprint, result, expires_at)
SELECT key, $4, fingerprint, $5, greatest(expires_at, statement_timestamp() + $6::bigint`+ms+`) FROM r
ON CONFLICT (key, name) DO UPDATE SET fingerprint = excluded.fingerprint, result = excluded.result, expires_at = excluded.expires_at`, t.Quoted, t.Steps),

		// $1 key, $2 fingerprint. The journal of an open run's request.
		loadClaimed: fmt.Sprintf(`SELECT name, result FROM %[1]s
WHERE key = $1 AND fingerprint = $2 AND expires_at > statement_timestamp()`, t.Steps),

		// $1 key, $2 fingerprint, $3 the run's backend pid, $4 name, $5
		// result, $6 retention ms. Journals the step if the run's session
		// holds the key's advisory lock (the claim's transaction is
		// open): pg_locks shows a 64-bit advisory key as its halves.
		saveClaimed: fmt.Sprintf(`WITH h AS (SELECT %[2]s AS h)
INSERT INTO %[1]s (key, name, fingerprint, result, expires_at)
SELECT $1, $4, $2, $5, statement_timestamp() + $6::bigint`+ms+` FROM h
WHERE EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.pid = $3
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid = ((h.h >> 32) & 4294967295)::oid AND l.objid = (h.h & 4294967295)::oid AND l.objsubid = 1)
ON CONFLICT (key, name) DO UPDATE SET fingerprint = excluded.fingerprint, result = excluded.result, expires_at = excluded.expires_at`, t.Steps, lockKey(t.Quoted, 1)),

		// $1 batch size, as the records' purge.
		purge: fmt.Sprintf(`DELETE FROM %[1]s WHERE (key, name) IN (
	SELECT key, name FROM %[1]s WHERE expires_at <= statement_timestamp()
	ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
AND expires_at <= statement_timestamp()`, t.Steps),
	}
}

// LoadSteps implements [idemstore.StepStore]: one statement. For a run whose
// claim is held by its open transaction (AcquireRun) it reads the entries
// journaled for the key and the run's fingerprint.
func (s *Store) LoadSteps(ctx context.Context, key, token string) (map[string][]byte, error) {
	return s.core.LoadSteps(ctx, key, token)
}

// Steps is [Store.LoadSteps]'s query.
func (o *ops) Steps(ctx context.Context, key, token string, run *runTx) (sqlfamily.StepRows, error) {
	if run != nil {
		return o.pool.Query(ctx, o.steps.loadClaimed, key, run.fp)
	}
	return o.pool.Query(ctx, o.steps.load, key, token)
}

// BeginStep implements [idemstore.StepStore]: the step gets a transaction of its
// own, on a connection of the pool, in which its function's writes
// (through [Tx] of the step's context) commit together with its journal
// entry, or not at all. It is not the run's transaction, which commits
// only with the response: a step's writes are committed when Step returns,
// and a re-run does not do them again. So a step does not see what the
// run's transaction wrote and has not committed, and must not write rows
// the run's transaction has written (it would wait for a lock its own run
// holds until the response).
//
// For a run whose claim is held by its open transaction (AcquireRun), the
// journal entry is written only while that transaction's session holds the
// key's advisory lock, which it does until the run commits or rolls back,
// or the server ends it (a frozen owner's): a run whose claim was lost
// journals nothing. The step's transaction commits durably, as the run's.
func (s *Store) BeginStep(ctx context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	return s.core.BeginStep(ctx, key, token, fence)
}

// BeginStep is [Store.BeginStep]'s transaction: the journal entry is
// written if the run still owns the record (checked under its row lock),
// then COMMIT; a refused entry rolls the step back (sqlfamily.StepTx).
func (o *ops) BeginStep(ctx context.Context, key, token string, fence int64, run *runTx) (idemstore.StepTx, error) {
	tx, err := o.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT " + durable})
	if err != nil {
		return nil, err
	}
	st := &sqlfamily.StepTx[step, *step]{Dialect: &dialect, Step: step{s: (*Store)(o), tx: tx, key: key, token: token, fence: fence}}
	if run != nil {
		st.Step.fp, st.Step.pid = run.fp, run.pid
	}
	return st, nil
}

// step is one step's transaction, as the family ends it (sqlfamily.Step).
type step struct {
	s          *Store
	tx         pgx.Tx
	key, token string
	fence      int64
	fp         string // an open run's: its fingerprint
	pid        uint32 // an open run's: its session's backend pid (0: none)
}

// Context returns ctx, in which [Tx] is the step's transaction.
func (t *step) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, t.tx)
}

// Save journals the step: of an open run, while its session holds the
// key's advisory lock; otherwise if token and fence own the in-progress
// record.
func (t *step) Save(ctx context.Context, name string, result []byte, ret int64) (bool, error) {
	var tag pgconn.CommandTag
	var err error
	if t.pid != 0 {
		tag, err = t.tx.Exec(ctx, t.s.steps.saveClaimed, t.key, t.fp, int64(t.pid), name, result, ret)
	} else {
		tag, err = t.tx.Exec(ctx, t.s.steps.save, t.key, t.token, t.fence, name, result, ret)
	}
	return tag.RowsAffected() > 0, err
}

// Commit commits the step.
func (t *step) Commit(ctx context.Context) error { return t.tx.Commit(ctx) }

// Rollback rolls the step back, if it has not ended.
func (t *step) Rollback(ctx context.Context) error {
	if err := t.tx.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

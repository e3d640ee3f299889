package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

var _ idemstore.StepStore = (*Store)(nil)

// StepsSchema is the SQL that creates the step journal's table beside the
// records' table of the default name, for a migration tool;
// [Store.CreateSchema] runs the same statements for the store's tables (the
// journal of table T is T_steps). One row per journaled step of a record's
// key: the fingerprint of the record it was written for (a record created
// anew for another payload does not see it), the step's result, and when
// it stops counting. A store whose runs call no idem.Step never reads or
// writes it.
const StepsSchema = "CREATE TABLE IF NOT EXISTS idem_records_steps (\n" +
	"\t`key`         VARBINARY(2048) NOT NULL,\n" +
	"\tname          VARBINARY(512)  NOT NULL,\n" +
	"\tfingerprint   VARBINARY(128)  NOT NULL,\n" +
	"\tresult        LONGBLOB        NOT NULL,\n" +
	"\texpires_at    DATETIME(6)     NOT NULL,\n" +
	"\tPRIMARY KEY (`key`, name),\n" +
	"\tKEY idem_records_steps_expires_at (expires_at)\n" +
	") ENGINE=InnoDB;\n"

// stepStatements are the journal's SQL for one records' table.
type stepStatements struct {
	load, save, loadClaimed, saveClaimed, held, purgeSelect, purgeDelete string
}

func newStepStatements(t sqlfamily.Table) stepStatements {
	return stepStatements{
		// ? key, ? token. No row: token does not own an in-progress record
		// of key; else one row per step journaled for the record's
		// fingerprint, or one row of NULLs for none.
		load: strings.ReplaceAll(sqlFor("SELECT s.name, s.result FROM $T r\n"+
			"LEFT JOIN $S s ON s.`key` = r.`key` AND s.fingerprint = r.fingerprint AND s.expires_at > "+now+"\n"+
			"WHERE r.`key` = ? AND r.token = ? AND NOT r.completed AND r.expires_at > "+now, t.Quoted), "$S", t.Steps),

		// ? name, ? result, ? retention µs, ? key, ? token, ? fence.
		// Journals the step if token and fence own the in-progress record,
		// checked under the record's row lock (FOR UPDATE), which the
		// statement holds until its transaction (the step's) ends. The
		// entry lives for the retention and at least as long as the record.
		save: strings.ReplaceAll(sqlFor("INSERT INTO $S (`key`, name, fingerprint, result, expires_at)\n"+
			"SELECT `key`, ?, fingerprint, ?, GREATEST(expires_at, "+now+" + INTERVAL ? MICROSECOND) FROM $T\n"+
			"WHERE `key` = ? AND token = ? AND fence = ? AND NOT completed AND expires_at > "+now+" FOR UPDATE\n"+
			"ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), result = VALUES(result), expires_at = VALUES(expires_at)", t.Quoted), "$S", t.Steps),

		// ? key, ? fingerprint. The journal of an open claim's key and
		// fingerprint (the claim's row is not committed: the store knows
		// its fingerprint).
		loadClaimed: sqlFor("SELECT name, result FROM $T WHERE `key` = ? AND fingerprint = ? AND expires_at > "+now, t.Steps),

		// ? key, ? name, ? fingerprint, ? result, ? retention µs. An open
		// claim's entry: the claim is checked by held, in the run's
		// transaction, before the step's commits.
		saveClaimed: sqlFor("INSERT INTO $T (`key`, name, fingerprint, result, expires_at) VALUES (?, ?, ?, ?, "+now+" + INTERVAL ? MICROSECOND)\n"+
			"ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), result = VALUES(result), expires_at = VALUES(expires_at)", t.Steps),

		// ? key, ? token, ? fence. Run in the run's transaction, which sees
		// its own claim's row: whether the transaction still holds it.
		held: sqlFor("SELECT 1 FROM $T WHERE `key` = ? AND token = ? AND fence = ? AND NOT completed", t.Quoted),

		// As the records' purge.
		purgeSelect: sqlFor("SELECT `key`, name FROM $T WHERE expires_at <= "+now+" ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED", t.Steps),
		purgeDelete: sqlFor("DELETE FROM $T WHERE (`key`, name) IN (%s) AND expires_at <= "+now, t.Steps),
	}
}

// LoadSteps implements [idemstore.StepStore]: one statement. For an open
// claim of this store (AcquireRun), the entries journaled for the key and
// the claim's fingerprint; otherwise those of the committed in-progress
// record that token owns.
func (s *Store) LoadSteps(ctx context.Context, key, token string) (map[string][]byte, error) {
	return s.core.LoadSteps(ctx, key, token)
}

// Steps is [Store.LoadSteps]'s query.
func (o *ops) Steps(ctx context.Context, key, token string, run *runTx) (sqlfamily.StepRows, error) {
	query, args := o.steps.load, []any{key, token}
	if run != nil {
		query, args = o.steps.loadClaimed, []any{key, run.fingerprint}
	}
	rows, err := o.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return stepRows{rows}, nil
}

// stepRows are the rows of Steps, closed as the family closes them.
type stepRows struct{ *sql.Rows }

// Close closes the rows.
func (r stepRows) Close() { _ = r.Rows.Close() }

// BeginStep implements [idemstore.StepStore]: the step gets a transaction
// of its own, on a connection of the pool, in which its function's writes
// (through [Tx] of the step's context) commit together with its journal
// entry, or not at all. It is not the run's transaction, which commits
// only with the response: a step's writes are committed when Step returns,
// and a re-run does not do them again. So a step does not see what the
// run's transaction wrote and has not committed, and must not write rows
// the run's transaction has written (it would wait for a lock its own run
// holds until the response). For an open claim, the entry is checked
// against the claim in the run's transaction (which sees its own claimed
// row) just before the step's transaction commits: a run whose claim the
// server ended journals nothing.
func (s *Store) BeginStep(ctx context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	return s.core.BeginStep(ctx, key, token, fence)
}

// BeginStep is [Store.BeginStep]'s transaction: the journal entry is
// written if the run still owns the record (checked under its row lock),
// then COMMIT; a refused entry rolls the step back (sqlfamily.StepTx).
func (o *ops) BeginStep(ctx context.Context, key, token string, fence int64, run *runTx) (idemstore.StepTx, error) {
	s := (*Store)(o)
	tx, end, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	return &sqlfamily.StepTx[step, *step]{Dialect: &dialect, Step: step{s: s, tx: tx, end: end, key: key, token: token, fence: fence, run: run}}, nil
}

// step is one step's transaction, as the family ends it (sqlfamily.Step).
type step struct {
	s          *Store
	tx         *sql.Tx
	end        context.CancelFunc // called when the step commits or rolls back
	key, token string
	fence      int64
	run        *runTx // the open claim the step is of, or nil (Runs.Of's)
}

// Context returns ctx, in which [Tx] is the step's transaction.
func (t *step) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, txKey{}, &Transaction{tx: t.tx})
}

// Save journals the step if token and fence own the in-progress record;
// of an open claim, the entry is written in the step's transaction and
// the claim checked in the run's.
func (t *step) Save(ctx context.Context, name string, result []byte, ret int64) (bool, error) {
	if t.run == nil {
		res, err := t.tx.ExecContext(ctx, t.s.steps.save, name, result, ret, t.key, t.token, t.fence)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	}
	ret = max(ret, t.s.abandonedUS)
	if _, err := t.tx.ExecContext(ctx, t.s.steps.saveClaimed, t.key, name, t.run.fingerprint, result, ret); err != nil {
		return false, err
	}
	if t.run.done || t.run.fence != t.fence {
		return false, nil
	}
	var one int
	err := t.run.tx.QueryRowContext(ctx, t.s.steps.held, t.key, t.token, t.fence).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) || (err != nil && claimLost(err)) {
		return false, nil
	}
	return err == nil, err
}

// Commit commits the step.
func (t *step) Commit(context.Context) error {
	defer t.end()
	return t.tx.Commit()
}

// Rollback rolls the step back, if it has not ended.
func (t *step) Rollback(context.Context) error {
	defer t.end()
	if err := t.tx.Rollback(); !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// CreateSchema creates the store's table and its index unless they exist
// ([Schema], under the store's table name), and the step journal's
// ([StepsSchema], the table's name + "_steps"). It changes nothing that
// exists: run [Store.Check] to verify an existing table. Replicas may call
// it at once (CREATE TABLE IF NOT EXISTS takes the table's metadata lock).
func (s *Store) CreateSchema(ctx context.Context) error {
	return s.core.CreateSchema(ctx)
}

// CreateSchema is [Store.CreateSchema]'s statements, one at a time.
func (o *ops) CreateSchema(ctx context.Context, records, steps string) error {
	for _, stmt := range []string{records, steps} {
		if _, err := o.db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// Check verifies what the store needs of the server and the table, and
// says what to change:
//
//   - commits survive a crash of the server: innodb_flush_log_at_trx_commit
//     is 1 and, with the binary log on, sync_binlog is 1 (otherwise an
//     answered request's record, and the handler's writes with it, can be
//     lost, and the retry runs the handler again);
//   - sql_mode is strict (STRICT_TRANS_TABLES or STRICT_ALL_TABLES), so that
//     a value too long for its column is refused rather than silently
//     truncated (a body cut short, two keys made one);
//   - innodb_rollback_on_timeout is OFF, so that a lock wait timeout in a
//     handler fails its statement, not the run's whole transaction and
//     claim;
//   - max_allowed_packet holds the largest record the store keeps
//     ([WithMaxRecord]), so that every response stored can be written and
//     read back (a larger one, past WithMaxRecord, is stored without its
//     body, its replays saying so, as past the engine's stored-body limit);
//   - the table exists, is InnoDB (transactions, row locks), has the
//     expected columns and types, the key a VARBINARY (compared byte for
//     byte: not a text column, whose collation would make two keys one)
//     and its primary key, on the whole column (not a prefix, which would
//     make keys that share it one), every column the store does not write may be
//     left out (NULL or a DEFAULT), and nothing on it can refuse the
//     store's statements once a handler has run (triggers, check and
//     foreign-key constraints, unique indexes other than the key's).
//
// The transaction isolation of the server (REPEATABLE READ by default) is
// not a problem: the store runs its transactions READ COMMITTED.
//
// Call it from a startup or readiness probe; the store also runs it before
// its first acquire and every 30 s after (see [Store.Acquire]). It returns
// nil, an error matching [idemstore.ErrStoreMisconfigured] that says what is
// wrong and what to change, or one matching only
// [idemstore.ErrStoreUnavailable] when the database could not be asked.
func (s *Store) Check(ctx context.Context) error {
	return s.core.Check(ctx)
}

// packetOverhead is what a completion's statement, or a replay's row, adds
// to the record's bytes: the other columns, the packet's headers.
const packetOverhead = 4 << 10

// ServerProblems checks the server's settings that the store's promise
// rests on, as a connection of the pool sees them.
func (o *ops) ServerProblems(ctx context.Context) ([]string, error) {
	var (
		flush, logBin, syncBinlog, rollbackOnTimeout sql.NullInt64
		mode                                         string
		packet                                       int64
	)
	err := o.db.QueryRowContext(ctx, "SELECT @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog, @@sql_mode, @@max_allowed_packet, @@innodb_rollback_on_timeout").
		Scan(&flush, &logBin, &syncBinlog, &mode, &packet, &rollbackOnTimeout)
	if err != nil {
		return nil, connectProblem(err)
	}
	o.packet.Store(packet)
	var problems []string
	if flush.Valid && flush.Int64 != 1 {
		problems = append(problems, fmt.Sprintf("innodb_flush_log_at_trx_commit is %d: a crash of the server loses commits it acknowledged up to a second before (records answered, the handler's writes with them), and their retries run the handler again; set it to 1 (SET GLOBAL innodb_flush_log_at_trx_commit = 1, and in the server's configuration)", flush.Int64))
	}
	if logBin.Valid && logBin.Int64 != 0 && syncBinlog.Valid && syncBinlog.Int64 != 1 {
		problems = append(problems, fmt.Sprintf("the binary log is on and sync_binlog is %d: a crash can lose the binary log's record of acknowledged commits, which crash recovery then rolls back; set it to 1 (SET GLOBAL sync_binlog = 1, and in the server's configuration)", syncBinlog.Int64))
	}
	if rollbackOnTimeout.Valid && rollbackOnTimeout.Int64 != 0 {
		problems = append(problems, "innodb_rollback_on_timeout is ON: a lock wait timeout in a handler rolls back the run's whole transaction, its claim with it, and the handler's statements after it commit on their own, outside the run (a retry runs them again); set innodb_rollback_on_timeout = OFF in the server's configuration and restart it (it cannot be changed at run time)")
	}
	if !strictMode(mode) {
		problems = append(problems, fmt.Sprintf("sql_mode %q is not strict: a value too long for its column is truncated with a warning instead of refused (a stored body cut short, two keys made one); add STRICT_TRANS_TABLES (SET GLOBAL sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES'), in the server's configuration, or sql_mode in the DSN)", mode))
	}
	if need := o.maxRecord + packetOverhead; packet < need {
		problems = append(problems, fmt.Sprintf("max_allowed_packet is %d bytes, below the %d the largest stored response needs (mysqlstore.WithMaxRecord: the engine's stored-body limit and headers): such a response could be neither stored nor replayed; raise it (SET GLOBAL max_allowed_packet = %d, and in the server's configuration), or lower idem.WithStoredBodyLimit and WithMaxRecord", packet, need, roundKiB(need)))
	}
	return problems, nil
}

// roundKiB rounds n up to a multiple of 1024, as max_allowed_packet is.
func roundKiB(n int64) int64 { return (n + 1023) / 1024 * 1024 }

// strictMode reports whether sql_mode mode refuses values too long for
// their column in transactional tables.
func strictMode(mode string) bool {
	for _, m := range strings.Split(mode, ",") {
		if m == "STRICT_TRANS_TABLES" || m == "STRICT_ALL_TABLES" {
			return true
		}
	}
	return false
}

// schemaArg is the table's database for information_schema's queries: its
// own, or the connection's (DATABASE()).
func (o *ops) schemaArg() any {
	if o.core.Table.Schema == "" {
		return nil
	}
	return o.core.Table.Schema
}

// TableProblems compares the table with the store's.
func (o *ops) TableProblems(ctx context.Context) ([]string, error) {
	t := o.core.Table.Name
	var engine sql.NullString
	err := o.db.QueryRowContext(ctx, `SELECT ENGINE FROM information_schema.TABLES
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?`, o.schemaArg(), o.core.Table.Last).Scan(&engine)
	if errors.Is(err, sql.ErrNoRows) {
		return []string{dialect.Absent()}, nil
	}
	if err != nil {
		return nil, err
	}
	var problems []string
	if !strings.EqualFold(engine.String, "InnoDB") {
		problems = append(problems, fmt.Sprintf("its engine is %s, which has no transactions or row locks: the handler's writes cannot commit with the record, and two requests can both run (ALTER TABLE %s ENGINE=InnoDB)", engine.String, t))
	}
	cols, err := o.columnProblems(ctx)
	if err != nil {
		return nil, err
	}
	more, err := o.objectProblems(ctx)
	if err != nil {
		return nil, err
	}
	return append(append(problems, cols...), more...), nil
}

// haveColumn is what Check reads of one of the table's columns.
type haveColumn struct {
	typ, columnType string
	length          sql.NullInt64
	precision       sql.NullInt64
	charset         sql.NullString
	nullable        bool
	hasDefault      bool
	generated       bool
}

// columnProblems compares the table's columns with the store's.
func (o *ops) columnProblems(ctx context.Context) ([]string, error) {
	rows, err := o.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_MAXIMUM_LENGTH, DATETIME_PRECISION,
	CHARACTER_SET_NAME, IS_NULLABLE = 'YES', COLUMN_DEFAULT IS NOT NULL AND COLUMN_DEFAULT <> 'NULL', EXTRA LIKE '%GENERATED%'
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
		o.schemaArg(), o.core.Table.Last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have, err := sqlfamily.Columns(rows, strings.ToLower, func(c *haveColumn) []any {
		return []any{&c.typ, &c.columnType, &c.length, &c.precision, &c.charset, &c.nullable, &c.hasDefault, &c.generated}
	})
	if err != nil {
		return nil, err
	}
	t := o.core.Table.Name
	var problems []string
	for _, c := range sqlfamily.RecordColumns {
		want := columnTypes[c.Name]
		h, ok := have.Ours(c.Name)
		fix := fmt.Sprintf("ALTER TABLE %s MODIFY `%s` %s", t, c.Name, want.decl)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("add column %s (ALTER TABLE %s ADD `%s` %s)", c.Name, t, c.Name, want.decl))
		case c.Name == "key" && h.charset.Valid:
			problems = append(problems, fmt.Sprintf("column key is %s CHARACTER SET %s: a text column compares keys by its collation (case and trailing spaces ignored; utf8mb3 holds no 4-byte character), so two different keys can share one record and one client be answered another's response; it must be VARBINARY, compared byte for byte (%s)", h.columnType, h.charset.String, fix))
		case !strings.EqualFold(h.typ, want.typ):
			problems = append(problems, fmt.Sprintf("column %s is %s, want %s (%s)", c.Name, h.columnType, want.decl, fix))
		case want.length > 0 && h.length.Int64 < want.length:
			problems = append(problems, fmt.Sprintf("column %s is %s, shorter than the store's values (%s)", c.Name, h.columnType, fix))
		case want.typ == "datetime" && h.precision.Int64 != 6:
			problems = append(problems, fmt.Sprintf("column %s is %s: leases are timed to the microsecond (%s)", c.Name, h.columnType, fix))
		case c.Nullable && !h.nullable:
			problems = append(problems, sqlfamily.LeftNull(c.Name, fix))
		case c.Defaulted && !h.hasDefault:
			problems = append(problems, sqlfamily.NoDefault(c.Name, fix))
		}
	}
	for name, h := range have.Others() {
		if !h.nullable && !h.hasDefault && !h.generated {
			problems = append(problems, sqlfamily.Unwritten(name, fmt.Sprintf("give it a DEFAULT, make it NULL, or drop it: ALTER TABLE %s DROP COLUMN `%s`", t, name)))
		}
	}
	return problems, nil
}

// objectProblems finds the key's primary key missing, and things on the
// table that can refuse the store's statements.
func (o *ops) objectProblems(ctx context.Context) ([]string, error) {
	t := o.core.Table.Name
	var problems []string
	type index struct {
		cols   []string
		unique bool
		prefix []sql.NullInt64 // each column's prefix length, if only a prefix is indexed
	}
	indexes := map[string]*index{}
	var order []string
	rows, err := o.db.QueryContext(ctx, `SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE = 0, SUB_PART FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`, o.schemaArg(), o.core.Table.Last)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, col string
		var unique bool
		var prefix sql.NullInt64
		if err := rows.Scan(&name, &col, &unique, &prefix); err != nil {
			rows.Close()
			return nil, err
		}
		ix := indexes[name]
		if ix == nil {
			ix = &index{unique: unique}
			indexes[name] = ix
			order = append(order, name)
		}
		ix.cols = append(ix.cols, strings.ToLower(col))
		ix.prefix = append(ix.prefix, prefix)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	const fixPK = "ALTER TABLE %s DROP PRIMARY KEY, ADD PRIMARY KEY (`key`)"
	switch pk := indexes["PRIMARY"]; {
	case pk == nil || len(pk.cols) != 1 || pk.cols[0] != "key":
		problems = append(problems, "make key the primary key, alone ("+fmt.Sprintf(fixPK, t)+")")
	case pk.prefix[0].Valid:
		problems = append(problems, fmt.Sprintf("the primary key indexes only the first %d bytes of key: keys that share them are one to the index, and a second such key can never be stored (409 while the first's record lasts); index the whole column (%s)", pk.prefix[0].Int64, fmt.Sprintf(fixPK, t)))
	}
	for _, name := range order {
		if ix := indexes[name]; name != "PRIMARY" && ix.unique {
			problems = append(problems, fmt.Sprintf("unique index %s can refuse the store's writes after a handler has run, and makes INSERT ... ON DUPLICATE KEY UPDATE update another key's row: only key is unique (DROP INDEX `%s` ON %s)", name, name, t))
		}
	}
	triggers, err := o.names(ctx, `SELECT TRIGGER_NAME FROM information_schema.TRIGGERS
WHERE EVENT_OBJECT_SCHEMA = COALESCE(?, DATABASE()) AND EVENT_OBJECT_TABLE = ? ORDER BY TRIGGER_NAME`)
	if err != nil {
		return nil, err
	}
	for _, tg := range triggers {
		problems = append(problems, sqlfamily.Trigger(tg, "DROP TRIGGER `"+tg+"`"))
	}
	constraints, err := o.names(ctx, `SELECT CONCAT(CONSTRAINT_TYPE, ' ', CONSTRAINT_NAME) FROM information_schema.TABLE_CONSTRAINTS
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND CONSTRAINT_TYPE IN ('CHECK', 'FOREIGN KEY') ORDER BY CONSTRAINT_NAME`)
	if err != nil {
		return nil, err
	}
	for _, c := range constraints {
		kind, name, _ := strings.Cut(c, " KEY ")
		drop := "CONSTRAINT"
		if kind == "FOREIGN" {
			drop = "FOREIGN KEY"
		} else {
			kind, name, _ = strings.Cut(c, " ")
		}
		problems = append(problems, sqlfamily.Constraint(strings.ToLower(kind)+" constraint "+name, fmt.Sprintf("ALTER TABLE %s DROP %s `%s`", t, drop, name)))
	}
	return problems, nil
}

// names runs query (with the table's database and name as arguments) and
// returns its one column.
func (o *ops) names(ctx context.Context, query string) ([]string, error) {
	rows, err := o.db.QueryContext(ctx, query, o.schemaArg(), o.core.Table.Last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

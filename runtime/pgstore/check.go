package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// CreateSchema creates the store's table and its index unless they exist
// ([Schema], under the store's table name), and the step journal's
// ([StepsSchema], the table's name + "_steps"). It changes nothing that exists:
// run [Store.Check] to verify an existing table. Replicas may call it at
// once: they take turns (an advisory lock of the table's name).
func (s *Store) CreateSchema(ctx context.Context) error {
	return s.core.CreateSchema(ctx)
}

// CreateSchema is [Store.CreateSchema]'s statements.
func (o *ops) CreateSchema(ctx context.Context, records, steps string) error {
	// The statements run in one implicit transaction (simple protocol),
	// behind a transaction-scoped advisory lock of the table's name: two
	// CREATE TABLE IF NOT EXISTS that start together both find no table,
	// and the second fails on the catalog's unique index of type names
	// (23505 on pg_type). Under the lock the second waits for the first to
	// commit and then finds the table.
	lock := "SELECT pg_advisory_xact_lock(hashtext(" + quoteLiteral("idemgen.pgstore.schema "+o.core.Table.Quoted) + "));\n"
	_, err := o.pool.Exec(ctx, lock+records+steps, pgx.QueryExecModeSimpleProtocol)
	return err
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Check verifies what the store needs of the database: that it answers,
// that the table exists with the expected columns and types and a unique
// key on key, that every column the store does not write may be left out
// (NULL or a DEFAULT), that nothing on the table can refuse the store's
// statements once a handler has run (triggers, rules, check and foreign-key
// constraints, unique indexes other than the key's), that neither it nor
// its step journal is UNLOGGED (emptied by a crash), and that the current
// user may select, insert, update and delete in it. Call it from a startup
// or readiness probe; the store also runs it before its first acquire and
// every 30 s after (see [Store.Acquire]). It returns nil, an error matching
// [idemstore.ErrStoreMisconfigured] that says what is wrong and what to change,
// or one matching only [idemstore.ErrStoreUnavailable] when the database could
// not be asked.
func (s *Store) Check(ctx context.Context) error {
	return s.core.Check(ctx)
}

// ServerProblems finds nothing: what the store needs of the server's
// settings, it sets for its own transactions.
func (o *ops) ServerProblems(context.Context) ([]string, error) { return nil, nil }

// TableProblems compares the table with the store's.
func (o *ops) TableProblems(ctx context.Context) ([]string, error) {
	var found bool
	if err := o.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, o.core.Table.Quoted).Scan(&found); err != nil {
		return nil, err
	}
	if !found {
		return []string{dialect.Absent()}, nil
	}
	problems, err := o.columnProblems(ctx)
	if err != nil {
		return nil, err
	}
	more, err := o.objectProblems(ctx)
	return append(problems, more...), err
}

// column is what Check reads of one of the table's columns.
type column struct {
	typ      string // format_type
	notNull  bool
	hasDef   bool
	position int16
}

// columnProblems compares the table's columns with the store's.
func (o *ops) columnProblems(ctx context.Context) ([]string, error) {
	rows, err := o.pool.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod), attnotnull, atthasdef, attnum FROM pg_attribute
WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, o.core.Table.Quoted)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have, err := sqlfamily.Columns(rows, func(name string) string { return name }, func(c *column) []any {
		return []any{&c.typ, &c.notNull, &c.hasDef, &c.position}
	})
	if err != nil {
		return nil, err
	}
	t := o.core.Table.Name
	var problems []string
	for _, c := range sqlfamily.RecordColumns {
		name, typ := c.Name, columnTypes[c.Name]
		switch h, ok := have.Ours(name); {
		case !ok:
			problems = append(problems, fmt.Sprintf("add column %s %s", name, typ))
		case h.typ != typ:
			problems = append(problems, fmt.Sprintf("column %s is %s, want %s (ALTER TABLE %s ALTER COLUMN %s TYPE %s)", name, h.typ, typ, t, name, typ))
		case c.Nullable && h.notNull:
			problems = append(problems, sqlfamily.LeftNull(name, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", t, name)))
		case c.Defaulted && !h.hasDef:
			problems = append(problems, sqlfamily.NoDefault(name, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT false", t, name)))
		}
	}
	for name, h := range have.Others() {
		if h.notNull && !h.hasDef {
			problems = append(problems, sqlfamily.Unwritten(name, fmt.Sprintf("give it a DEFAULT, drop NOT NULL: ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL, or drop the column", t, name)))
		}
	}
	return problems, nil
}

// objectProblems finds the key's unique index missing, things on the table
// that can refuse the store's statements, and missing rights.
func (o *ops) objectProblems(ctx context.Context) ([]string, error) {
	t := o.core.Table.Name
	var problems []string
	var unique, sel, ins, upd, del, unlogged, stepsUnlogged bool
	var triggers, constraints, indexes, rules []string
	err := o.pool.QueryRow(ctx, `SELECT
	EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attname = 'key'),
	has_table_privilege($1, 'SELECT'), has_table_privilege($1, 'INSERT'),
	has_table_privilege($1, 'UPDATE'), has_table_privilege($1, 'DELETE'),
	ARRAY(SELECT tgname::text FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal AND tgenabled <> 'D' ORDER BY tgname),
	ARRAY(SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('c', 'f', 'x') ORDER BY conname),
	ARRAY(SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = $1::regclass AND (i.indisunique OR i.indisexclusion) AND NOT (i.indnkeyatts = 1 AND i.indpred IS NULL
			AND i.indkey[0] = (SELECT attnum FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'key'))
		ORDER BY c.relname),
	ARRAY(SELECT rulename::text FROM pg_rewrite WHERE ev_class = $1::regclass AND rulename <> '_RETURN' ORDER BY rulename),
	EXISTS (SELECT 1 FROM pg_class WHERE oid = $1::regclass AND relpersistence = 'u'),
	EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass($2) AND relpersistence = 'u')`,
		o.core.Table.Quoted, o.core.Table.Steps).Scan(&unique, &sel, &ins, &upd, &del, &triggers, &constraints, &indexes, &rules, &unlogged, &stepsUnlogged)
	if err != nil {
		return nil, err
	}
	if !unique {
		problems = append(problems, "make key the primary key (ALTER TABLE "+t+" ADD PRIMARY KEY (key))")
	}
	// An unlogged table skips the WAL: a crash or an immediate stop of
	// the server empties it, and every run answered before is run again.
	if unlogged {
		problems = append(problems, "it is UNLOGGED: a crash or an immediate stop of the server empties it, and every answered request runs again (ALTER TABLE "+t+" SET LOGGED)")
	}
	if stepsUnlogged {
		problems = append(problems, "its step journal "+o.core.Table.Steps+" is UNLOGGED: a crash or an immediate stop of the server empties it, and journaled steps run again (ALTER TABLE "+o.core.Table.Steps+" SET LOGGED)")
	}
	for _, tg := range triggers {
		problems = append(problems, sqlfamily.Trigger(tg, fmt.Sprintf("DROP TRIGGER %s ON %s", tg, t)))
	}
	for _, c := range constraints {
		problems = append(problems, sqlfamily.Constraint("constraint "+c, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", t, c)))
	}
	for _, r := range rules {
		problems = append(problems, fmt.Sprintf("rule %s rewrites the store's statements on the table (one that does nothing makes every write of the store vanish) (DROP RULE %s ON %s)", r, r, t))
	}
	for _, ix := range indexes {
		problems = append(problems, fmt.Sprintf("unique index %s can refuse the store's writes after a handler has run: only key is unique (DROP INDEX %s)", ix, ix))
	}
	var missing []string
	for _, p := range []struct {
		ok   bool
		name string
	}{{sel, "SELECT"}, {ins, "INSERT"}, {upd, "UPDATE"}, {del, "DELETE"}} {
		if !p.ok {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("GRANT %s ON %s TO the store's user", strings.Join(missing, ", "), t))
	}
	return problems, nil
}

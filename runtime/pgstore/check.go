package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// CreateSchema creates the store's table and its index unless they exist
// ([Schema], under the store's table name), and the step journal's
// ([StepsSchema], the table's name + "_steps"). It changes nothing that exists:
// run [Store.Check] to verify an existing table.
func (s *Store) CreateSchema(ctx context.Context) error {
	if s.tableErr != nil {
		return s.tableErr
	}
	// The statements run in one implicit transaction (simple protocol).
	if _, err := s.pool.Exec(ctx, schemaSQL(s.table)+stepsSchemaSQL(s.table), pgx.QueryExecModeSimpleProtocol); err != nil {
		return storeError("create schema", err)
	}
	return nil
}

// Check verifies what the store needs of the database: that it answers,
// that the table exists with the expected columns and a unique key on key,
// and that the current user may select, insert, update and delete in it.
// Call it from a startup or readiness probe. It returns nil, an error
// matching [idemstore.ErrStoreMisconfigured] that says what to change, or one
// matching only [idemstore.ErrStoreUnavailable] when the database could not be
// asked.
func (s *Store) Check(ctx context.Context) error {
	if s.tableErr != nil {
		return s.tableErr
	}
	t := s.table.name
	var found bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.table.quoted).Scan(&found); err != nil {
		return storeError("check", err)
	}
	if !found {
		return &idemstore.StoreError{Op: "check", Err: &configError{msg: fmt.Sprintf(
			"table %s does not exist: apply pgstore.Schema with your migrations, or call Store.CreateSchema", t)}}
	}
	var problems []string
	rows, err := s.pool.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, s.table.quoted)
	if err != nil {
		return storeError("check", err)
	}
	have := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return storeError("check", err)
		}
		have[name] = typ
	}
	if err := rows.Err(); err != nil {
		return storeError("check", err)
	}
	for _, c := range columns {
		switch typ, ok := have[c[0]]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("add column %s %s", c[0], c[1]))
		case typ != c[1]:
			problems = append(problems, fmt.Sprintf("column %s is %s, want %s", c[0], typ, c[1]))
		}
	}
	var unique, sel, ins, upd, del bool
	err = s.pool.QueryRow(ctx, `SELECT
	EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attname = 'key'),
	has_table_privilege($1, 'SELECT'), has_table_privilege($1, 'INSERT'),
	has_table_privilege($1, 'UPDATE'), has_table_privilege($1, 'DELETE')`, s.table.quoted).Scan(&unique, &sel, &ins, &upd, &del)
	if err != nil {
		return storeError("check", err)
	}
	if _, ok := have["key"]; ok && !unique {
		problems = append(problems, "make key the primary key (ALTER TABLE "+t+" ADD PRIMARY KEY (key))")
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
	if len(problems) > 0 {
		return &idemstore.StoreError{Op: "check", Err: &configError{msg: "table " + t + ": " + strings.Join(problems, "; ")}}
	}
	return nil
}

package sqlfamily

import (
	"context"
	"fmt"
	"iter"
	"strings"
)

// CheckWith is a store's Check: the error of its WithTable name, or the
// verdict on the problems that server and table find, each a sentence that says what to change; an
// error of theirs is the database's, which could not be asked.
func (c *Core) CheckWith(ctx context.Context, server, table func(context.Context) ([]string, error)) error {
	if c.TableErr != nil {
		return c.TableErr
	}
	var parts []string
	for _, part := range []struct {
		find func(context.Context) ([]string, error)
		of   string
	}{{server, "server"}, {table, "table " + c.Table.Name}} {
		problems, err := part.find(ctx)
		if err != nil {
			return c.Dialect.StoreError("check", err)
		}
		if len(problems) > 0 {
			parts = append(parts, part.of+": "+strings.Join(problems, "; "))
		}
	}
	if len(parts) > 0 {
		return Misconfigured("check", strings.Join(parts, "; "))
	}
	return nil
}

// Column is one of the records' table's columns, as every store's Check
// expects it whatever its type (each dialect's own).
type Column struct {
	Name      string
	Nullable  bool // an in-progress record leaves it NULL
	Defaulted bool // the acquire's INSERT leaves it to its DEFAULT
}

// RecordColumns are the columns of the records' table that the stores
// write and read, in the order of their Schema.
var RecordColumns = [...]Column{
	{Name: "key"},
	{Name: "fingerprint"},
	{Name: "completed", Defaulted: true},
	{Name: "token"},
	{Name: "fence"},
	{Name: "lease_until"},
	{Name: "expires_at"},
	{Name: "status", Nullable: true},
	{Name: "header", Nullable: true},
	{Name: "body", Nullable: true},
	{Name: "body_omitted", Defaulted: true},
}

// TableColumns are the table's columns as Check reads them ([Columns]):
// what the store's own are, and the others.
type TableColumns[C any] struct {
	have  map[string]C
	names []string        // in the table's order
	ours  map[string]bool // asked for by Ours
}

// Columns reads rows, the table's columns in the table's order, one a
// row: the column's name, then the values that dest returns the
// destinations of. Names are folded by fold, as the dialect compares
// them.
func Columns[C any](rows Rows, fold func(string) string, dest func(*C) []any) (*TableColumns[C], error) {
	t := &TableColumns[C]{have: map[string]C{}, ours: map[string]bool{}}
	for rows.Next() {
		var name string
		var c C
		if err := rows.Scan(append([]any{&name}, dest(&c)...)...); err != nil {
			return nil, err
		}
		name = fold(name)
		t.have[name] = c
		t.names = append(t.names, name)
	}
	return t, rows.Err()
}

// Ours returns the column name, one the store writes or reads, and
// whether the table has it.
func (t *TableColumns[C]) Ours(name string) (C, bool) {
	t.ours[name] = true
	c, ok := t.have[name]
	return c, ok
}

// Others are the table's columns that are not the store's (not asked for
// by Ours), in the table's order.
func (t *TableColumns[C]) Others() iter.Seq2[string, C] {
	return func(yield func(string, C) bool) {
		for _, name := range t.names {
			if !t.ours[name] && !yield(name, t.have[name]) {
				return
			}
		}
	}
}

// The sentences of Check's problems that the SQL stores share; fix is the
// dialect's statement (or advice) that mends it.

// Absent is the problem of a table that does not exist.
func (d *Dialect) Absent() string {
	return "it does not exist: apply " + d.Name + ".Schema with your migrations, or call Store.CreateSchema"
}

// LeftNull is the problem of a NOT NULL column that an in-progress record
// leaves NULL.
func LeftNull(column, fix string) string {
	return fmt.Sprintf("column %s is NOT NULL, but an in-progress record leaves it NULL (%s)", column, fix)
}

// NoDefault is the problem of a column without the DEFAULT that the
// acquire's INSERT leaves it to.
func NoDefault(column, fix string) string {
	return fmt.Sprintf("column %s has no DEFAULT, and the store does not write it on insert (%s)", column, fix)
}

// Unwritten is the problem of a column of the table's own, not the
// store's, that every insert must fill.
func Unwritten(column, fix string) string {
	return fmt.Sprintf("column %s is NOT NULL without a DEFAULT, and the store does not write it: every insert fails (%s)", column, fix)
}

// Trigger is the problem of a trigger on the table.
func Trigger(name, fix string) string {
	return fmt.Sprintf("trigger %s can refuse or change the store's writes after a handler has run (%s)", name, fix)
}

// Constraint is the problem of a constraint on the table (what: its kind
// and name).
func Constraint(what, fix string) string {
	return fmt.Sprintf("%s can refuse the store's writes after a handler has run (%s)", what, fix)
}

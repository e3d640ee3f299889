package sqlfamily

import "fmt"

// Columns reads rows, the table's columns in the table's order, one a
// row: the column's name, then the values that dest returns the
// destinations of. It returns them by name (folded by fold, as the
// dialect compares names), and the names in order.
func Columns[C any](rows Rows, fold func(string) string, dest func(*C) []any) (have map[string]C, names []string, err error) {
	have = map[string]C{}
	for rows.Next() {
		var name string
		var c C
		if err := rows.Scan(append([]any{&name}, dest(&c)...)...); err != nil {
			return nil, nil, err
		}
		name = fold(name)
		have[name] = c
		names = append(names, name)
	}
	return have, names, rows.Err()
}

// The sentences of Check's problems that the SQL stores share; fix is the
// dialect's statement (or advice) that mends it.

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

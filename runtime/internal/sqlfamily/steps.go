package sqlfamily

import "github.com/idemgen/idemgen/runtime/idemstore"

// Rows are the rows of a query, as pgx's and database/sql's both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Steps reads the rows (name, result) of a read of the step journal: of an
// open claim's (claimed), whose steps are rows of their own, or of the
// committed in-progress record that the token owns, joined to its steps,
// where no row means that the token owns no such record and one row with
// a NULL name that the record has no step. It returns the journal, or
// [idemstore.ErrNotOwner].
func (d *Dialect) Steps(rows Rows, claimed bool) (map[string][]byte, error) {
	var steps map[string][]byte
	for rows.Next() {
		var name *string
		var result []byte
		if err := rows.Scan(&name, &result); err != nil {
			return nil, d.StoreError("steps", err)
		}
		if steps == nil {
			steps = make(map[string][]byte)
		}
		if name != nil {
			if result == nil {
				result = []byte{}
			}
			steps[*name] = result
		}
	}
	if err := rows.Err(); err != nil {
		return nil, d.StoreError("steps", err)
	}
	switch {
	case steps != nil:
		return steps, nil
	case claimed:
		return map[string][]byte{}, nil
	}
	return nil, idemstore.ErrNotOwner
}

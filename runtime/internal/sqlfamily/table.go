package sqlfamily

import (
	"fmt"
	"strings"
)

// DefaultTable is the name of the records' table of every SQL store (its
// WithTable's default), and the name its Schema and StepsSchema create.
const DefaultTable = "idem_records"

// Table is the records' table of a store, and its step journal's (the
// records' table's name + "_steps"), parsed and quoted.
type Table struct {
	Name   string // as given: "records" or "schema.records"
	Schema string // the part before the dot, "" for none
	Last   string // the table's own name
	Quoted string // for SQL text
	Index  string // the expires_at index, quoted, unqualified

	Steps, StepsIndex string // the journal's table and its index, quoted
}

// ParseTable checks name, a table name given to WithTable: one or two
// dot-separated parts (Dialect.Qualifier.table), each a name of letters,
// digits and underscores that does not start with a digit, of at most
// Dialect.MaxIdent bytes.
func (d *Dialect) ParseTable(name string) (Table, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return Table{}, fmt.Errorf("%s: table name %q: at most one dot (%s.table)", d.Name, name, d.Qualifier)
	}
	for _, p := range parts {
		if !plainIdent(p, d.MaxIdent) {
			return Table{}, fmt.Errorf("%s: table name %q: %q is not a plain identifier (letters, digits, _; not starting with a digit; at most %d bytes)", d.Name, name, p, d.MaxIdent)
		}
	}
	t := Table{Name: name, Last: parts[len(parts)-1]}
	if len(parts) == 2 {
		t.Schema = parts[0]
	}
	t.Quoted, t.Index = d.Quote(t.Schema, t.Last), d.Quote("", t.Last+"_expires_at")
	t.Steps, t.StepsIndex = d.Quote(t.Schema, t.Last+"_steps"), d.Quote("", t.Last+"_steps_expires_at")
	return t, nil
}

func plainIdent(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Create is the SQL that creates t's tables and indexes: schema and
// stepsSchema, the store's Schema and StepsSchema, which create them under
// DefaultTable's names, for t's.
func (t *Table) Create(schema, stepsSchema string) (records, steps string) {
	if t.Name == DefaultTable {
		return schema, stepsSchema
	}
	return rename(schema, DefaultTable, t.Quoted, t.Index), rename(stepsSchema, DefaultTable+"_steps", t.Steps, t.StepsIndex)
}

// rename is schema, the SQL that creates the table from and its index
// from + "_expires_at", for the table quoted and its index index.
func rename(schema, from, quoted, index string) string {
	s := strings.Replace(schema, from+"_expires_at", index, 1)
	return strings.ReplaceAll(s, " "+from+" ", " "+quoted+" ")
}

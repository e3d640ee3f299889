package sqlfamily

import (
	"fmt"
	"strings"
)

// Table is a table name given to a store's WithTable, checked.
type Table struct {
	Name   string // as given: "records" or "schema.records"
	Schema string // the part before the dot, "" for none
	Last   string // the table's own name
}

// ParseTable checks name, a table name given to the WithTable of store:
// one or two dot-separated parts (qualifier.table), each a name of
// letters, digits and underscores that does not start with a digit, of at
// most maxIdent bytes.
func ParseTable(store, name, qualifier string, maxIdent int) (Table, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return Table{}, fmt.Errorf("%s: table name %q: at most one dot (%s.table)", store, name, qualifier)
	}
	for _, p := range parts {
		if !plainIdent(p, maxIdent) {
			return Table{}, fmt.Errorf("%s: table name %q: %q is not a plain identifier (letters, digits, _; not starting with a digit; at most %d bytes)", store, name, p, maxIdent)
		}
	}
	t := Table{Name: name, Last: parts[len(parts)-1]}
	if len(parts) == 2 {
		t.Schema = parts[0]
	}
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

// Rename is schema, the SQL that creates the table from and its index
// from + "_expires_at", for the table quoted and its index index, unless
// the store's table has the default name (asIs), for which it is schema.
func Rename(schema string, asIs bool, from, quoted, index string) string {
	if asIs {
		return schema
	}
	s := strings.Replace(schema, from+"_expires_at", index, 1)
	return strings.ReplaceAll(s, " "+from+" ", " "+quoted+" ")
}

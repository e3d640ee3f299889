package pgstore

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DefaultTable is the name of the records' table (WithTable).
const DefaultTable = "idem_records"

// Schema is the SQL that creates the records' table under its default name,
// for a migration tool; [Store.CreateSchema] runs the same statements for
// the store's table. One row per key: an in-progress record (completed
// false) holds its owner's token, its fence and its lease deadline; a
// completed one holds the response. expires_at is when the record stops
// counting (lease deadline plus the abandoned TTL while in progress, the
// retention once completed); the index serves the purge.
const Schema = `CREATE TABLE IF NOT EXISTS idem_records (
	key          text        PRIMARY KEY,
	fingerprint  text        NOT NULL,
	completed    boolean     NOT NULL DEFAULT false,
	token        text        NOT NULL,
	fence        bigint      NOT NULL,
	lease_until  timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL,
	status       integer,
	header       jsonb,
	body         bytea,
	body_omitted boolean     NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS idem_records_expires_at ON idem_records (expires_at);
`

// columns are the table's columns and their types (format_type), which
// Check expects.
var columns = [][2]string{
	{"key", "text"},
	{"fingerprint", "text"},
	{"completed", "boolean"},
	{"token", "text"},
	{"fence", "bigint"},
	{"lease_until", "timestamp with time zone"},
	{"expires_at", "timestamp with time zone"},
	{"status", "integer"},
	{"header", "jsonb"},
	{"body", "bytea"},
	{"body_omitted", "boolean"},
}

// nullable are the columns an in-progress record leaves NULL, and
// defaulted those the acquire's INSERT leaves to their DEFAULT.
var (
	nullable  = map[string]bool{"status": true, "header": true, "body": true}
	defaulted = map[string]bool{"completed": true, "body_omitted": true}
)

// table is a table name, parsed and quoted.
type table struct {
	name   string // as given: "records" or "schema.records"
	quoted string // for SQL text
	index  string // the expires_at index, quoted, unqualified
}

// parseTable checks a table name given to WithTable: one or two
// dot-separated parts (schema.table), each a name of letters, digits and
// underscores that does not start with a digit.
func parseTable(name string) (table, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return table{}, fmt.Errorf("pgstore: table name %q: at most one dot (schema.table)", name)
	}
	for _, p := range parts {
		if !plainIdent(p) {
			return table{}, fmt.Errorf("pgstore: table name %q: %q is not a plain identifier (letters, digits, _; not starting with a digit; at most 63 bytes)", name, p)
		}
	}
	last := parts[len(parts)-1]
	return table{name: name, quoted: pgx.Identifier(parts).Sanitize(), index: pgx.Identifier{last + "_expires_at"}.Sanitize()}, nil
}

func plainIdent(s string) bool {
	if s == "" || len(s) > 63-len("_expires_at") {
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

// schemaSQL is Schema for t.
func schemaSQL(t table) string {
	if t.name == DefaultTable {
		return Schema
	}
	s := strings.Replace(Schema, "idem_records_expires_at", t.index, 1)
	return strings.ReplaceAll(s, " idem_records ", " "+t.quoted+" ")
}

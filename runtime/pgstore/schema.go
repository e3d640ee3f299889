package pgstore

import (
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// DefaultTable is the name of the records' table (WithTable):
// "idem_records".
const DefaultTable = sqlfamily.DefaultTable

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

// columnTypes are the types (format_type) that Check expects of the
// table's columns (sqlfamily.RecordColumns).
var columnTypes = map[string]string{
	"key":          "text",
	"fingerprint":  "text",
	"completed":    "boolean",
	"token":        "text",
	"fence":        "bigint",
	"lease_until":  "timestamp with time zone",
	"expires_at":   "timestamp with time zone",
	"status":       "integer",
	"header":       "jsonb",
	"body":         "bytea",
	"body_omitted": "boolean",
}

// quoteName quotes schema.name (schema "" for none) as an identifier.
func quoteName(schema, name string) string {
	if schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{schema, name}.Sanitize()
}

package pgstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// dialect is what the SQL stores' shared code (sqlfamily) asks of this
// one.
var dialect = sqlfamily.Dialect{
	Name:        "pgstore",
	Schema:      Schema,
	StepsSchema: StepsSchema,
	Qualifier:   "schema",
	// PostgreSQL's identifiers are at most 63 bytes, an index's name too.
	MaxIdent:      63 - len("_expires_at"),
	Unit:          time.Millisecond,
	Quote:         quoteName,
	Misconfigured: misconfigured,
	Refused:       refusedByTable,
	Connect:       connectRefused,
	NoTable:       func(err error) bool { return sqlState(err) == "42P01" }, // undefined_table
}

// misconfigured returns the server's message for the codes of a missing
// table, column or right, a table without the unique key ON CONFLICT
// needs, or a column of another type.
func misconfigured(err error) (string, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return "", false
	}
	switch pe.Code {
	case "42P01", "42703", "42501", "42P10", "42804":
		// undefined_table, undefined_column, insufficient_privilege,
		// invalid_column_reference, datatype_mismatch
		return pe.Message, true
	}
	return "", false
}

// connectRefused returns what to change, then the driver's text, for a
// connection the server refused for what the pool's connection string
// says: a database that does not exist, a password it refused.
func connectRefused(err error) (string, bool) {
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	if !errors.As(err, &ce) || ce.Config == nil || !errors.As(err, &pe) {
		return "", false
	}
	var what string
	switch pe.Code {
	case "3D000": // invalid_catalog_name
		what = fmt.Sprintf("database %q does not exist on the server: create it (CREATE DATABASE %s) or name an existing one in the pool's connection string",
			ce.Config.Database, pgx.Identifier{ce.Config.Database}.Sanitize())
	case "28P01": // invalid_password
		what = fmt.Sprintf("the server refused the password of user %q: correct it in the pool's connection string (or in PGPASSWORD or the .pgpass file that pgx falls back to)", ce.Config.User)
	default:
		return "", false
	}
	return what + ": " + err.Error(), true
}

// refusedByTable reports whether err, an error of one of the store's own
// statements, comes from how the table is set up rather than from the
// database's state: a value too long for the column (22001; not the rest
// of class 22, which arguments can cause), integrity violations (class 23:
// NOT NULL, CHECK, foreign key, or a unique index other than the key's,
// whose conflicts ON CONFLICT handles), a trigger or rule that raised
// (P0001), and the codes Dialect.StoreError already calls misconfigured.
func refusedByTable(err error) (msg string, cause error, ok bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return "", nil, false
	}
	_, misconf := misconfigured(pe)
	switch code := pe.Code; {
	case misconf, code == "22001", len(code) == 5 && code[:2] == "23", code == "P0001":
		return pe.Message + " (SQLSTATE " + code + "): the records' table refuses the store's statements; run Store.Check for what to change", pe, true
	}
	return "", nil, false
}

// sqlState is the SQLSTATE of err, "" for an error that is not the
// server's.
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

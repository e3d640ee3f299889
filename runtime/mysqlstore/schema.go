package mysqlstore

import "github.com/idemgen/idemgen/runtime/internal/sqlfamily"

// DefaultTable is the name of the records' table (WithTable):
// "idem_records".
const DefaultTable = sqlfamily.DefaultTable

// MaxKeyLength is the longest storage key the store keeps, in bytes: the
// length of the key column. The engine's keys are far shorter (an
// operation token, a hashed scope and a client key of at most 255 bytes,
// escaped); a longer one is refused with an error, never truncated.
const MaxKeyLength = 2048

// Schema is the SQL that creates the records' table under its default name,
// for a migration tool; [Store.CreateSchema] runs the same statements for
// the store's table. One row per key: an in-progress record (completed 0)
// holds its owner's token, its fence and its lease deadline; a completed
// one holds the response. expires_at is when the record stops counting
// (lease deadline plus the abandoned TTL while in progress, the retention
// once completed, from the completion or, when that is later and the two
// durations are equal, from the lease deadline); the index serves the
// purge. Times are UTC
// (UTC_TIMESTAMP(6)), whatever the session's time_zone.
//
// The key is VARBINARY: keys compare byte for byte. A text column would
// compare them by its collation (case-insensitive, trailing spaces
// ignored, and a utf8mb3 column cannot hold a 4-byte character), so that
// two clients' keys could share a record. The table is InnoDB, the engine
// with transactions and row locks the store relies on.
const Schema = "CREATE TABLE IF NOT EXISTS idem_records (\n" +
	"\t`key`         VARBINARY(2048) NOT NULL,\n" +
	"\tfingerprint   VARBINARY(128)  NOT NULL,\n" +
	"\tcompleted     BOOLEAN         NOT NULL DEFAULT 0,\n" +
	"\ttoken         VARBINARY(128)  NOT NULL,\n" +
	"\tfence         BIGINT          NOT NULL,\n" +
	"\tlease_until   DATETIME(6)     NOT NULL,\n" +
	"\texpires_at    DATETIME(6)     NOT NULL,\n" +
	"\tstatus        INT             NULL,\n" +
	"\theader        LONGBLOB        NULL,\n" +
	"\tbody          LONGBLOB        NULL,\n" +
	"\tbody_omitted  BOOLEAN         NOT NULL DEFAULT 0,\n" +
	"\tPRIMARY KEY (`key`),\n" +
	"\tKEY idem_records_expires_at (expires_at)\n" +
	") ENGINE=InnoDB;\n"

// columnType is what Check expects of one of the table's columns
// (sqlfamily.RecordColumns): information_schema's DATA_TYPE, the least
// length of a VARBINARY (CHARACTER_MAXIMUM_LENGTH), and its definition.
type columnType struct {
	typ    string
	length int64  // VARBINARY: at least this many bytes
	decl   string // the column's definition in Schema, for ALTER TABLE
}

var columnTypes = map[string]columnType{
	"key":          {typ: "varbinary", length: MaxKeyLength, decl: "VARBINARY(2048) NOT NULL"},
	"fingerprint":  {typ: "varbinary", length: 128, decl: "VARBINARY(128) NOT NULL"},
	"completed":    {typ: "tinyint", decl: "BOOLEAN NOT NULL DEFAULT 0"},
	"token":        {typ: "varbinary", length: 128, decl: "VARBINARY(128) NOT NULL"},
	"fence":        {typ: "bigint", decl: "BIGINT NOT NULL"},
	"lease_until":  {typ: "datetime", decl: "DATETIME(6) NOT NULL"},
	"expires_at":   {typ: "datetime", decl: "DATETIME(6) NOT NULL"},
	"status":       {typ: "int", decl: "INT NULL"},
	"header":       {typ: "longblob", decl: "LONGBLOB NULL"},
	"body":         {typ: "longblob", decl: "LONGBLOB NULL"},
	"body_omitted": {typ: "tinyint", decl: "BOOLEAN NOT NULL DEFAULT 0"},
}

// quoteName quotes schema.name (schema "" for none) with backquotes; both
// are plain identifiers.
func quoteName(schema, name string) string {
	if schema == "" {
		return "`" + name + "`"
	}
	return "`" + schema + "`.`" + name + "`"
}

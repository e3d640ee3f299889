package mysqlstore

import (
	"errors"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// The server's error numbers the store tells apart.
const (
	errNoSuchTable      = 1146 // ER_NO_SUCH_TABLE
	errBadField         = 1054 // ER_BAD_FIELD_ERROR
	errTableAccess      = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errColumnAccess     = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	errDBAccess         = 1044 // ER_DBACCESS_DENIED_ERROR
	errDataTooLong      = 1406 // ER_DATA_TOO_LONG
	errBadNull          = 1048 // ER_BAD_NULL_ERROR
	errNoDefault        = 1364 // ER_NO_DEFAULT_FOR_FIELD
	errRowIsReferenced  = 1451 // ER_ROW_IS_REFERENCED_2
	errNoReferencedRow  = 1452 // ER_NO_REFERENCED_ROW_2
	errDupEntry         = 1062 // ER_DUP_ENTRY: a claim's INSERT on the key's row (claimRow), or a unique index other than the key's
	errCheckMySQL       = 3819 // ER_CHECK_CONSTRAINT_VIOLATED
	errCheckMariaDB     = 4025 // ER_CONSTRAINT_FAILED
	errSignal           = 1644 // ER_SIGNAL_EXCEPTION: a trigger that signalled
	errTruncatedField   = 1366 // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
	errTruncated        = 1292 // ER_TRUNCATED_WRONG_VALUE
	errOutOfRange       = 1264 // ER_WARN_DATA_OUT_OF_RANGE
	errPacketTooLarge   = 1153 // ER_NET_PACKET_TOO_LARGE
	errPacketOverflowed = 1301 // ER_WARN_ALLOWED_PACKET_OVERFLOWED
	errLockWait         = 1205 // ER_LOCK_WAIT_TIMEOUT
	errLockNoWait       = 3572 // ER_LOCK_NOWAIT (MySQL)
	errConnKilled       = 1927 // ER_CONNECTION_KILLED (MariaDB)
	errIdleKilled       = 4031 // ER_CLIENT_INTERACTION_TIMEOUT (MySQL)
	errShutdown         = 1053 // ER_SERVER_SHUTDOWN
)

// dialect is what the SQL stores' shared code (sqlfamily) asks of this
// one.
var dialect = sqlfamily.Dialect{
	Name:        "mysqlstore",
	Schema:      Schema,
	StepsSchema: StepsSchema,
	MaxKey:      MaxKeyLength,
	Qualifier:   "database",
	// MySQL's identifiers are at most 64 characters, the journal's
	// index's name too.
	MaxIdent:      64 - len("_steps_expires_at"),
	Unit:          time.Microsecond,
	Quote:         quoteName,
	Misconfigured: misconfigured,
	Refused:       refusedByTable,
	NoTable:       func(err error) bool { return errorNumber(err) == errNoSuchTable },
	// A store never verified refuses acquires while Check cannot ask the
	// database (503 store-unavailable), so that no handler runs on it.
	UnverifiedFails: true,
}

// misconfigured returns the server's message for the errors of a missing
// table, column or right, unless the store said what to change already.
func misconfigured(err error) (string, bool) {
	if isConfigError(err) {
		return "", false // the store's own, which says what to change
	}
	switch errorNumber(err) {
	case errNoSuchTable, errBadField, errTableAccess, errColumnAccess, errDBAccess:
		var me *mysql.MySQLError
		errors.As(err, &me)
		return me.Message, true
	}
	return "", false
}

// errorNumber is the server's error number of err, 0 for an error that is
// not the server's.
func errorNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// refusedByTable reports whether err, an error of one of the store's own
// statements, comes from how the table or the server is set up rather
// than from the database's state: a value too long or of the wrong kind
// for its column, an integrity violation (NOT NULL, CHECK, foreign key, a
// unique index other than the key's), a trigger that signalled, a
// statement or row larger than max_allowed_packet, and the errors
// Dialect.StoreError already calls misconfigured or the store found so
// itself.
func refusedByTable(err error) (msg string, cause error, ok bool) {
	const advice = ": the records' table or the server refuses the store's statements; run Store.Check for what to change"
	if ce := (*sqlfamily.ConfigError)(nil); errors.As(err, &ce) {
		return ce.Msg, ce.Err, true // the store's own finding (a completion's guard, a DSN's)
	}
	if errors.Is(err, mysql.ErrPktTooLarge) {
		return err.Error() + " (the driver's maxAllowedPacket)" + advice, causeOf(err), true
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return "", nil, false
	}
	switch me.Number {
	case errNoSuchTable, errBadField, errTableAccess, errColumnAccess, errDBAccess,
		errDataTooLong, errBadNull, errNoDefault, errRowIsReferenced, errNoReferencedRow, errDupEntry,
		errCheckMySQL, errCheckMariaDB, errSignal, errTruncatedField, errTruncated, errOutOfRange,
		errPacketTooLarge, errPacketOverflowed:
		return me.Message + " (error " + strconv.Itoa(int(me.Number)) + ")" + advice, causeOf(err), true
	}
	return "", nil, false
}

// causeOf is the database's error inside err, a *idemstore.StoreError.
func causeOf(err error) error {
	var se *idemstore.StoreError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

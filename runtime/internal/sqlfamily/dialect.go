package sqlfamily

import (
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Dialect is what the family's shared code asks of one SQL store: its
// name, its limits, and how its driver's errors read.
type Dialect struct {
	Name   string // the store's package, as log lines and messages name it
	MaxKey int    // the longest key the store keeps, in bytes; 0 for no limit

	// Schema and StepsSchema are the SQL that creates the records' table
	// and the step journal's under their default names (the store's
	// constants of these names).
	Schema, StepsSchema string

	// Unit is the unit of the integers the dialect's SQL takes for
	// durations (Duration): a millisecond or a microsecond.
	Unit time.Duration

	// Qualifier is what the part of a table name before its dot names
	// ("schema"), MaxIdent the longest name of a table, and Quote quotes
	// schema.name (schema "" for none), both plain identifiers.
	Qualifier string
	MaxIdent  int
	Quote     func(schema, name string) string

	// Misconfigured returns the database's message when err says that
	// the table, a column or a right is missing.
	Misconfigured func(err error) (msg string, ok bool)

	// Refused tells whether err, an error of one of the store's own
	// statements, comes from how the table or the server is set up rather
	// than from the database's state (including what Misconfigured
	// reports), and returns the misconfiguration's message and the
	// database's error it wraps.
	Refused func(err error) (msg string, cause error, ok bool)

	// Connect returns the store's sentence of what to change, followed by
	// the driver's text, when err is the server's refusal of a connection
	// for what the connection string says (a database that does not
	// exist, a wrong password); nil for none.
	Connect func(err error) (msg string, ok bool)

	// NoTable tells whether err says the statement's table does not
	// exist.
	NoTable func(err error) bool

	// UnverifiedFails makes an acquire of a store never verified fail with
	// Check's error while Check cannot ask the database; otherwise the
	// acquire goes on, and its own statement reports the failure.
	UnverifiedFails bool
}

// StoreError wraps a failure of the database in an *idemstore.StoreError,
// of op (a statement of the store's, or "check" for Check's own); a
// connection refused for what the connection string says (Connect), or a
// missing table, column or right, also matches
// idemstore.ErrStoreMisconfigured. The latter points to Store.Check for
// what to change, unless Check itself failed so.
func (d *Dialect) StoreError(op string, err error) error {
	if d.Connect != nil {
		if msg, ok := d.Connect(err); ok {
			return &idemstore.StoreError{Op: op, Err: &ConfigError{Msg: msg, Err: err}}
		}
	}
	if msg, ok := d.Misconfigured(err); ok {
		if op != "check" {
			msg += ": run Store.Check for what to change"
		}
		err = &ConfigError{Msg: msg, Err: err}
	}
	return &idemstore.StoreError{Op: op, Err: err}
}

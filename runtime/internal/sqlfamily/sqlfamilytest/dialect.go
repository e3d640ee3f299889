package sqlfamilytest

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Dialect is one SQL store and its server, as the suite drives them: how
// to reach the shared server or start a private one, open a pool, and the
// few statements and wire facts that differ between the dialects.
type Dialect interface {
	// Name names the server in messages: "PostgreSQL", "MariaDB".
	Name() string
	// DSN returns the shared server's DSN (a URL or a driver's DSN);
	// without one it skips the test, or fails it when CI=true.
	DSN(t testing.TB) string
	// Open returns a pool of the server at dsn with at most maxConns
	// connections (0: the driver's default), closed when the test ends; an
	// unreachable server fails the test.
	Open(t testing.TB, dsn string, maxConns int) DB
	// OpenCounting is Open, with a function that returns the round trips
	// the pool's connections have made so far.
	OpenCounting(t testing.TB, dsn string, maxConns int) (DB, func() int64)
	// StartServer starts a private server, stopped and removed when the
	// test ends; without the server's binaries it skips the test, or fails
	// it when CI=true.
	StartServer(t testing.TB) Server
	// Unreachable returns a store whose pool points at addr, where nothing
	// listens, without connecting.
	Unreachable(t testing.TB, addr string) Store
	// Addr returns the address (host:port) of dsn's server.
	Addr(t testing.TB, dsn string) string
	// WithAddr returns dsn with its server's address replaced by addr.
	WithAddr(t testing.TB, dsn, addr string) string
	// IsCommit reports whether b, bytes a client sent its server in one
	// read, holds the COMMIT the store sends after a run's completion.
	IsCommit(b []byte) bool
	// CommitSent reports whether b, the bytes sent from the read that
	// held the COMMIT on, end the message it is in (a read may cut a
	// message short, and a server that reads only part of the COMMIT
	// before the connection closes commits nothing).
	CommitSent(b []byte) bool
	// CommitAnswered reports whether b, the bytes the server sent after
	// the COMMIT reached it, end its answer to it.
	CommitAnswered(b []byte) bool

	// ReadBatch sends reqs to s's server as one batch of its read lanes,
	// as a lane does with the reads that queued while it was busy, and
	// returns their replies in order.
	ReadBatch(ctx context.Context, s Store, reqs []idemstore.AcquireRequest) []Read
	// IsMissingTable reports whether err is the store's answer to a
	// statement on a table that does not exist.
	IsMissingTable(err error) bool

	// Quote quotes an identifier.
	Quote(name string) string
	// Arg is the placeholder of the n-th argument of a statement (from 1).
	Arg(n int) string
	// Ago is an SQL expression of a moment before the server's clock's
	// now, to move a lease or an expiry into the past.
	Ago() string
	// InsertPayment inserts a row (key, fence) into the business table in
	// the transaction ctx carries (a run's or a step's) and returns its id.
	InsertPayment(ctx context.Context, table, key string, fence int64) (int64, error)
	// TxExec runs query in the transaction ctx carries (a run's),
	// through the store's Tx.
	TxExec(ctx context.Context, query string, args ...any) error
	// TxEnds are statements a handler may send through the store's Tx
	// that end the run's transaction, or look as if they did.
	TxEnds() []TxEnd
	// Locked reports whether another session holds a lock on table (an
	// open transaction wrote to it).
	Locked(t testing.TB, db DB, table string) bool

	// Misconfigurations are tables the store cannot keep its promise on,
	// each as a change to a table the store created.
	Misconfigurations() []Misconfiguration
	// ChangeColumns drops the column body_omitted of table and narrows its
	// fence, and returns what Check must then say.
	ChangeColumns(t testing.TB, db DB, table string) []string
	// AddRefusingTrigger adds a trigger to table that refuses the updates
	// of a completion, and returns what Check must then say.
	AddRefusingTrigger(t testing.TB, db DB, table string) string
	// CreateSchema creates a schema (a MySQL database) of the test's own,
	// dropped when the test ends, and returns its name.
	CreateSchema(t testing.TB, db DB) string
}

// Misconfiguration is a change to a records table that the store's
// statements fail on, or that breaks its promise.
type Misconfiguration struct {
	Name string
	// Alter changes table (on db) and returns what Check must then say.
	Alter func(t testing.TB, db DB, table string) []string
}

// DB is a pool of one server.
type DB interface {
	// Exec runs query, failing the test on an error.
	Exec(t testing.TB, query string, args ...any)
	// Count returns the number of rows of table matching where (SQL,
	// with args).
	Count(t testing.TB, table, where string, args ...any) int
	// Hold runs query in a transaction that stays open until release.
	Hold(t testing.TB, query string) (release func())
	// Store returns a store on a records table of the test's own, created
	// now and dropped (with its steps' table) when the test ends, and the
	// table's name.
	Store(t testing.TB, c StoreConfig) (Store, string)
	// NewStore returns a store on table, without creating it, with no
	// background purge: as a new process has.
	NewStore(table string) Store
	// Payments creates a business table of the test's own, (id, key,
	// fence) with no unique key (a second run of a key would add a second
	// row), dropped when the test ends, and returns its name.
	Payments(t testing.TB) string
}

// StoreConfig is what a test sets of a store's options.
type StoreConfig struct {
	PurgeInterval time.Duration // 0: no background purge
	PurgeBatch    int           // 0: the store's default
	ReadLanes     int           // 0: the store's default
}

// Store is what the suite calls of a SQL store.
type Store interface {
	idemstore.TxStore
	idemstore.StepStore
	CreateSchema(ctx context.Context) error
	Check(ctx context.Context) error
	Purge(ctx context.Context) (int64, error)
	Close()
}

// Server is a private server that a test stops and starts again.
type Server interface {
	// DSN is the server's DSN.
	DSN() string
	// Start starts the server and waits until it accepts connections.
	Start() error
	// Stop stops the server (sessions are cut, open transactions roll
	// back) and waits until it is down.
	Stop() error
}

package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestFaults runs the SQL stores' fault suite on PostgreSQL: the server on
// DATABASE_URL, and private clusters for the restarts.
func TestFaults(t *testing.T) { sqlfamilytest.Run(t, dialect{}) }

// dialect is PostgreSQL with pgx, as the fault suite drives it.
type dialect struct{}

var _ sqlfamilytest.Dialect = dialect{}

func (dialect) Name() string            { return "PostgreSQL" }
func (dialect) DSN(t testing.TB) string { return pgtest.URL(t) }

func (dialect) Open(t testing.TB, dsn string, maxConns int) sqlfamilytest.DB {
	return pgPool{pgtest.PoolOf(t, dsn, maxConns)}
}

func (dialect) OpenCounting(t testing.TB, dsn string, maxConns int) (sqlfamilytest.DB, func() int64) {
	pool, counter := pgtest.CountingPoolOf(t, dsn, maxConns)
	return pgPool{pool}, counter.RoundTrips
}

func (dialect) StartServer(t testing.TB) sqlfamilytest.Server { return server{pgtest.StartServer(t)} }

// server is a private cluster, named by its URL.
type server struct{ *pgtest.Server }

func (s server) DSN() string { return s.URL() }

func (dialect) Unreachable(t testing.TB, addr string) sqlfamilytest.Store {
	pool, err := pgxpool.New(context.Background(), "postgres://idem@"+addr+"/postgres?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pgstore.New(pool, pgstore.WithPurgeInterval(-1))
}

func (dialect) Addr(t testing.TB, dsn string) string { return parseURL(t, dsn).Host }

func (dialect) WithAddr(t testing.TB, dsn, addr string) string {
	u := parseURL(t, dsn)
	u.Host = addr
	return u.String()
}

func parseURL(t testing.TB, dsn string) *url.URL {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// commitBind is the Bind of COMMIT as pgx prepares it (its statement
// cache names a statement "stmtcache_" and the hex of 24 bytes of its
// SQL's SHA-256): the empty portal's name, then the statement's.
var commitBind = func() []byte {
	sum := sha256.Sum256([]byte("COMMIT"))
	return []byte("\x00stmtcache_" + hex.EncodeToString(sum[:24]) + "\x00")
}()

// IsCommit reports whether b holds a Bind message of COMMIT, as the store
// sends it after the completion.
func (dialect) IsCommit(b []byte) bool {
	i := bytes.Index(b, commitBind)
	return i >= 5 && b[i-5] == 'B'
}

// CommitSent: pgx sends the COMMIT in a batch that ends with a Sync.
func (dialect) CommitSent(b []byte) bool { return bytes.HasSuffix(b, []byte{'S', 0, 0, 0, 4}) }

// CommitAnswered: the server's answer to the batch ends with its
// ReadyForQuery.
func (dialect) CommitAnswered(b []byte) bool {
	n := len(b)
	return n >= 6 && b[n-6] == 'Z' && bytes.Equal(b[n-5:n-1], []byte{0, 0, 0, 5})
}

func (dialect) ReadBatch(ctx context.Context, s sqlfamilytest.Store, reqs []idemstore.AcquireRequest) []sqlfamilytest.Read {
	return s.(*pgstore.Store).ReadBatch(ctx, reqs)
}

// IsMissingTable: the server's undefined_table, as the store passes it on.
func (dialect) IsMissingTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

func (dialect) Quote(name string) string { return pgx.Identifier{name}.Sanitize() }
func (dialect) Arg(n int) string         { return "$" + strconv.Itoa(n) }
func (dialect) Ago() string              { return "statement_timestamp() - interval '1 millisecond'" }

func (dialect) InsertPayment(ctx context.Context, table, key string, fence int64) (int64, error) {
	tx := pgstore.Tx(ctx)
	if tx == nil {
		return 0, fmt.Errorf("no transaction in the handler's context")
	}
	var id int64
	err := tx.QueryRow(ctx, "INSERT INTO "+pgx.Identifier{table}.Sanitize()+" (key, fence) VALUES ($1, $2) RETURNING id", key, fence).Scan(&id)
	return id, err
}

func (dialect) TxExec(ctx context.Context, sql string, args ...any) error {
	_, err := pgstore.Tx(ctx).Exec(ctx, sql, args...)
	return err
}

// TxEnds: the store refuses a statement that ends the transaction before
// it is sent, and every statement after it, so the claim holds until the
// handler returns. A ROLLBACK the refusal cannot see (behind another
// statement of a multi-statement string) ends the transaction on the
// server: the store sees it in the connection's transaction status, but
// the claim ended with it.
func (dialect) TxEnds() []sqlfamilytest.TxEnd {
	end := func(name, sql string, args ...any) sqlfamilytest.TxEnd {
		return sqlfamilytest.TxEnd{Name: name, Refused: true, Ends: true, LaterRefused: true,
			End: func(ctx context.Context, _ string) error { return dialect{}.TxExec(ctx, sql, args...) }}
	}
	sent := end("ROLLBACK behind another statement", "SELECT 1; ROLLBACK", pgx.QueryExecModeSimpleProtocol)
	sent.Refused, sent.Released = false, true
	return []sqlfamilytest.TxEnd{
		end("COMMIT", "COMMIT"),
		end("ROLLBACK", "rollback"),
		end("END", " \n\tEnd;"),
		end("ABORT after a comment", "/* undo */ -- all\nABORT"),
		end("COMMIT AND CHAIN", "COMMIT AND CHAIN"),
		end("PREPARE TRANSACTION", "PREPARE TRANSACTION 'p'"),
		sent,
	}
}

// Locked asks pg_locks.
func (dialect) Locked(t testing.TB, d sqlfamilytest.DB, table string) bool {
	t.Helper()
	var held bool
	err := d.(pgPool).QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_locks
WHERE pid <> pg_backend_pid() AND relation = to_regclass($1)::oid)`, table).Scan(&held)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// Misconfigurations: varchar columns too narrow and an extra NOT NULL
// column fail the acquire; header text, a trigger that raises and a rule
// that does nothing fail (or void) the completion.
func (d dialect) Misconfigurations() []sqlfamilytest.Misconfiguration {
	alter := func(name string, sql func(table, fn string) string, check ...string) sqlfamilytest.Misconfiguration {
		return sqlfamilytest.Misconfiguration{Name: name, Alter: func(t testing.TB, db sqlfamilytest.DB, table string) []string {
			db.Exec(t, sql(d.Quote(table), d.refuseFunction(t, db, table)))
			return check
		}}
	}
	return []sqlfamilytest.Misconfiguration{
		alter("varchar columns", func(tb, _ string) string {
			return fmt.Sprintf(`ALTER TABLE %[1]s ALTER COLUMN key TYPE varchar(24), ALTER COLUMN fingerprint TYPE varchar(24),
				ALTER COLUMN token TYPE varchar(24)`, tb)
		}, "column key is character varying(24), want text", "ALTER COLUMN key TYPE text"),
		alter("extra NOT NULL column", func(tb, _ string) string {
			return "ALTER TABLE " + tb + " ADD COLUMN tenant_id bigint NOT NULL"
		}, "tenant_id", "NOT NULL", "DEFAULT"),
		alter("header text", func(tb, _ string) string {
			return "ALTER TABLE " + tb + " ALTER COLUMN header TYPE text"
		}, "column header is text, want jsonb", "ALTER COLUMN header TYPE jsonb"),
		alter("failing trigger", func(tb, fn string) string {
			return fmt.Sprintf(`CREATE FUNCTION %[2]s() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'no updates'; END$$;
				CREATE TRIGGER refuse BEFORE UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[2]s()`, tb, fn)
		}, "trigger refuse", "DROP TRIGGER refuse"),
		alter("rule that does nothing", func(tb, _ string) string {
			return "CREATE RULE ignore_updates AS ON UPDATE TO " + tb + " DO INSTEAD NOTHING"
		}, "rule ignore_updates", "DROP RULE ignore_updates ON"),
		alter("unlogged table", func(tb, _ string) string {
			return "ALTER TABLE " + tb + " SET UNLOGGED"
		}, "UNLOGGED", "SET LOGGED"),
		{Name: "unlogged step journal", Alter: func(t testing.TB, db sqlfamilytest.DB, table string) []string {
			steps := d.Quote(table + "_steps")
			db.Exec(t, "ALTER TABLE "+steps+" SET UNLOGGED")
			return []string{"step journal", "UNLOGGED", "ALTER TABLE " + steps + " SET LOGGED"}
		}},
	}
}

// refuseFunction is the quoted name of a trigger function of table's,
// dropped (with its triggers) when the test ends.
func (d dialect) refuseFunction(t testing.TB, on sqlfamilytest.DB, table string) string {
	fn := d.Quote(table + "_refuse")
	t.Cleanup(func() { _, _ = on.(pgPool).Pool.Exec(context.Background(), "DROP FUNCTION IF EXISTS "+fn+"() CASCADE") })
	return fn
}

func (d dialect) ChangeColumns(t testing.TB, db sqlfamilytest.DB, table string) []string {
	db.Exec(t, "ALTER TABLE "+d.Quote(table)+" DROP COLUMN body_omitted, ALTER COLUMN fence TYPE integer")
	return []string{"add column body_omitted boolean", "column fence is integer, want bigint"}
}

func (d dialect) AddRefusingTrigger(t testing.TB, db sqlfamilytest.DB, table string) string {
	db.Exec(t, fmt.Sprintf(`CREATE FUNCTION %[2]s() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'no writes'; END$$;
		CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[2]s()`, d.Quote(table), d.refuseFunction(t, db, table)))
	return "DROP TRIGGER refuse"
}

func (dialect) CreateSchema(t testing.TB, db sqlfamilytest.DB) string {
	schema := pgtest.Name(t)
	db.Exec(t, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { db.Exec(t, "DROP SCHEMA "+schema+" CASCADE") })
	return schema
}

// pgPool is a pool, as the fault suite uses it.
type pgPool struct{ *pgxpool.Pool }

func (d pgPool) Exec(t testing.TB, sql string, args ...any) { pgtest.Exec(t, d.Pool, sql, args...) }

func (d pgPool) Count(t testing.TB, table, where string, args ...any) int {
	return pgtest.Count(t, d.Pool, table, where, args...)
}

func (d pgPool) Hold(t testing.TB, sql string) (release func()) {
	ctx := context.Background()
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatalf("%s: %v", sql, err)
	}
	return func() { _ = tx.Rollback(ctx) }
}

func (d pgPool) Store(t testing.TB, c sqlfamilytest.StoreConfig) (sqlfamilytest.Store, string) {
	var opts []pgstore.Option
	if c.PurgeInterval > 0 {
		opts = append(opts, pgstore.WithPurgeInterval(c.PurgeInterval))
	}
	if c.PurgeBatch > 0 {
		opts = append(opts, pgstore.WithPurgeBatch(c.PurgeBatch))
	}
	if c.ReadLanes > 0 {
		opts = append(opts, pgstore.WithReadLanes(c.ReadLanes))
	}
	s, table := pgtest.Store(t, d.Pool, opts...)
	return s, table
}

func (d pgPool) NewStore(table string) sqlfamilytest.Store {
	return pgstore.New(d.Pool, pgstore.WithTable(table), pgstore.WithPurgeInterval(-1))
}

func (d pgPool) Payments(t testing.TB) string {
	t.Helper()
	name := pgtest.Name(t) + "_pay"
	pgtest.Exec(t, d.Pool, "CREATE TABLE "+name+" (id bigserial PRIMARY KEY, key text NOT NULL, fence bigint NOT NULL)")
	t.Cleanup(func() { pgtest.Drop(t, d.Pool, name) })
	return name
}

var _ sqlfamilytest.RowsHolder = dialect{}

// QueryRows runs query in the run's transaction and leaves its rows open:
// they hold the run's connection, so the keep-alive sends nothing until
// they are read.
func (dialect) QueryRows(ctx context.Context, query string) (sqlfamilytest.Rows, error) {
	rows, err := pgstore.Tx(ctx).Query(ctx, query)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

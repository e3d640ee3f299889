package mysqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestFaults runs the SQL stores' fault suite on MariaDB: the server on
// MYSQL_DSN, and private servers for the restarts.
func TestFaults(t *testing.T) { sqlfamilytest.Run(t, dialect{}) }

// dialect is MariaDB (MySQL) with go-sql-driver, as the fault suite drives
// it.
type dialect struct{}

var (
	_ sqlfamilytest.Dialect    = dialect{}
	_ sqlfamilytest.RowsHolder = dialect{}
)

func (dialect) Name() string            { return "MariaDB" }
func (dialect) DSN(t testing.TB) string { return mysqltest.DSN(t) }

func (dialect) Open(t testing.TB, dsn string, maxConns int) sqlfamilytest.DB {
	return mysqlDB{mysqltest.DBOf(t, dsn, maxConns)}
}

func (dialect) OpenCounting(t testing.TB, dsn string, maxConns int) (sqlfamilytest.DB, func() int64) {
	var n atomic.Int64
	return mysqlDB{countingDB(t, dsn, maxConns, &n)}, n.Load
}

func (dialect) StartServer(t testing.TB) sqlfamilytest.Server { return mysqltest.StartServer(t) }

func (dialect) Unreachable(t testing.TB, addr string) sqlfamilytest.Store {
	pool, err := sql.Open("mysql", "idem@tcp("+addr+")/idem?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	return mysqlstore.New(pool, mysqlstore.WithPurgeInterval(-1))
}

func (dialect) Addr(t testing.TB, dsn string) string { return parseDSN(t, dsn).Addr }

func (dialect) WithAddr(t testing.TB, dsn, addr string) string {
	cfg := parseDSN(t, dsn)
	cfg.Addr = addr
	return cfg.FormatDSN()
}

func parseDSN(t testing.TB, dsn string) *mysql.Config {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// commitPacket is go-sql-driver's COMMIT: a packet of 7 bytes, sequence 0,
// COM_QUERY (3), "COMMIT".
var commitPacket = []byte("\x07\x00\x00\x00\x03COMMIT")

func (dialect) IsCommit(b []byte) bool { return bytes.Contains(b, commitPacket) }

// CommitSent: IsCommit saw the whole COMMIT packet.
func (dialect) CommitSent([]byte) bool { return true }

// CommitAnswered: the COMMIT is a round trip of its own, answered by one
// packet (a 3-byte length and a sequence number, then the payload).
func (dialect) CommitAnswered(b []byte) bool {
	return len(b) >= 4 && len(b) >= 4+int(b[0])|int(b[1])<<8|int(b[2])<<16
}

func (dialect) ReadBatch(ctx context.Context, s sqlfamilytest.Store, reqs []idemstore.AcquireRequest) []sqlfamilytest.Read {
	return s.(*mysqlstore.Store).ReadBatch(ctx, reqs)
}

// IsMissingTable: the server's ER_NO_SUCH_TABLE, which the store answers
// as a misconfiguration.
func (dialect) IsMissingTable(err error) bool {
	var me *mysql.MySQLError
	return errors.Is(err, idemstore.ErrStoreMisconfigured) && errors.As(err, &me) && me.Number == 1146
}

func (dialect) Quote(name string) string { return "`" + name + "`" }
func (dialect) Arg(int) string           { return "?" }
func (dialect) Ago() string              { return "UTC_TIMESTAMP(6) - INTERVAL 1000 MICROSECOND" }

func (dialect) InsertPayment(ctx context.Context, table, key string, fence int64) (int64, error) {
	tx := mysqlstore.Tx(ctx)
	if tx == nil {
		return 0, fmt.Errorf("no transaction in the handler's context")
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO `"+table+"` (`key`, fence) VALUES (?, ?)", key, fence)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// QueryRows runs query in the run's transaction and leaves its rows open.
func (dialect) QueryRows(ctx context.Context, query string) (sqlfamilytest.Rows, error) {
	rows, err := mysqlstore.Tx(ctx).QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (dialect) TxExec(ctx context.Context, query string, args ...any) error {
	_, err := mysqlstore.Tx(ctx).ExecContext(ctx, query, args...)
	return err
}

// TxEnds: the store sends what the handler sends, and finds a
// transaction the handler ended before it writes the completion. What the
// handler's statements did stays as that end made them: a COMMIT (or a
// statement that commits implicitly) commits the claim, as an in-progress
// record that keeps its lease, and the payment before it; the payment
// after it commits on its own. SET autocommit = 1 ends nothing while
// autocommit is already 1 (a transaction the store began), and BEGIN
// commits and opens another transaction, which the completion then
// commits: both runs commit as any other.
func (dialect) TxEnds() []sqlfamilytest.TxEnd {
	end := func(name string, ends bool, stmts ...string) sqlfamilytest.TxEnd {
		return sqlfamilytest.TxEnd{Name: name, Ends: ends, Payments: 2, End: func(ctx context.Context, pay string) error {
			for _, q := range stmts {
				if err := (dialect{}).TxExec(ctx, strings.ReplaceAll(q, "$P", pay)); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return nil
		}}
	}
	rollback := end("ROLLBACK", true, "ROLLBACK")
	rollback.Released, rollback.ReleasedHere, rollback.Payments = true, true, 1 // the payment after it only
	return []sqlfamilytest.TxEnd{
		end("COMMIT", true, "COMMIT"),
		rollback,
		end("DDL", true, "CREATE TEMPORARY TABLE IF NOT EXISTS scratch (n INT) ENGINE=InnoDB", "CREATE TABLE IF NOT EXISTS `$P_ddl` (n INT) ENGINE=InnoDB"),
		end("autocommit off then on", true, "SET autocommit = 0", "SET autocommit = 1"),
		end("autocommit on", false, "SET autocommit = 1"),
		end("BEGIN", false, "BEGIN"),
	}
}

// Locked tries a locking read of every row of table, without waiting:
// InnoDB locks the rows an open transaction inserted, invisible as they
// are.
func (dialect) Locked(t testing.TB, d sqlfamilytest.DB, table string) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := d.(mysqlDB).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SELECT 1 FROM `"+table+"` FOR UPDATE NOWAIT")
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1205 || me.Number == 3572) { // MariaDB: ER_LOCK_WAIT_TIMEOUT; MySQL: ER_LOCK_NOWAIT
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// Misconfigurations: a table that is not InnoDB, whose key is text (a
// utf8mb3 column, compared by a case-insensitive collation), or that the
// store's statements would fail on, at acquire or at completion.
func (dialect) Misconfigurations() []sqlfamilytest.Misconfiguration {
	alter := func(name, sql string, check ...string) sqlfamilytest.Misconfiguration {
		return sqlfamilytest.Misconfiguration{Name: name, Alter: func(t testing.TB, db sqlfamilytest.DB, table string) []string {
			trigger := table + "_refuse"
			db.Exec(t, sprintf(sql, "`"+table+"`", trigger))
			wants := make([]string, len(check))
			for i, c := range check {
				wants[i] = sprintf(c, "`"+table+"`", trigger)
			}
			return wants
		}}
	}
	return []sqlfamilytest.Misconfiguration{
		alter("MyISAM", "ALTER TABLE %s MODIFY `key` VARBINARY(1000) NOT NULL, ENGINE=MyISAM", // MyISAM keys are at most 1000 bytes
			"its engine is MyISAM, which has no transactions", "ENGINE=InnoDB"),
		alter("utf8mb3 key", "ALTER TABLE %s MODIFY `key` VARCHAR(255) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci NOT NULL",
			"column key is varchar(255) CHARACTER SET utf8mb3", "two different keys can share one record", "MODIFY `key` VARBINARY(2048) NOT NULL"),
		alter("narrow columns", "ALTER TABLE %s MODIFY fingerprint VARBINARY(24) NOT NULL, MODIFY token VARBINARY(24) NOT NULL",
			"column fingerprint is varbinary(24), shorter than the store's values", "MODIFY `fingerprint` VARBINARY(128) NOT NULL"),
		alter("body of 64 KiB", "ALTER TABLE %s MODIFY body BLOB NULL",
			"column body is blob, want LONGBLOB NULL"),
		alter("seconds", "ALTER TABLE %s MODIFY lease_until DATETIME NOT NULL",
			"column lease_until is datetime: leases are timed to the microsecond"),
		alter("extra NOT NULL column", "ALTER TABLE %s ADD tenant_id BIGINT NOT NULL",
			"column tenant_id is NOT NULL without a DEFAULT"),
		alter("status NOT NULL", "ALTER TABLE %s MODIFY status INT NOT NULL",
			"column status is NOT NULL, but an in-progress record leaves it NULL"),
		alter("unique token", "CREATE UNIQUE INDEX by_token ON %s (token)",
			"unique index by_token", "DROP INDEX `by_token`"),
		alter("check constraint", "ALTER TABLE %s ADD CONSTRAINT small CHECK (status < 300)",
			"check constraint small", "DROP CONSTRAINT `small`"),
		alter("failing trigger", "CREATE TRIGGER %[2]s BEFORE UPDATE ON %[1]s FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no updates'",
			"trigger %[2]s can refuse", "DROP TRIGGER `%[2]s`"),
	}
}

// sprintf is fmt.Sprintf that tolerates unused arguments.
func sprintf(format string, args ...any) string {
	s := format
	for i, a := range args {
		s = strings.ReplaceAll(s, "%["+string(rune('1'+i))+"]s", a.(string))
	}
	if len(args) > 0 {
		s = strings.Replace(s, "%s", args[0].(string), 1)
	}
	return s
}

func (dialect) ChangeColumns(t testing.TB, db sqlfamilytest.DB, table string) []string {
	db.Exec(t, "ALTER TABLE `"+table+"` DROP COLUMN body_omitted, MODIFY fence INT NOT NULL")
	return []string{"add column body_omitted (ALTER TABLE " + table + " ADD `body_omitted` BOOLEAN NOT NULL DEFAULT 0)",
		"column fence is int(11), want BIGINT NOT NULL"}
}

func (dialect) AddRefusingTrigger(t testing.TB, db sqlfamilytest.DB, table string) string {
	db.Exec(t, "CREATE TRIGGER `"+table+"_refuse` BEFORE UPDATE ON `"+table+"` FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no updates'")
	return "DROP TRIGGER `" + table + "_refuse`"
}

func (dialect) CreateSchema(t testing.TB, db sqlfamilytest.DB) string {
	schema := mysqltest.Name(t)
	db.Exec(t, "CREATE DATABASE "+schema)
	t.Cleanup(func() { db.Exec(t, "DROP DATABASE "+schema) })
	return schema
}

// mysqlDB is a pool, as the fault suite uses it.
type mysqlDB struct{ *sql.DB }

func (d mysqlDB) Exec(t testing.TB, query string, args ...any) {
	mysqltest.Exec(t, d.DB, query, args...)
}

func (d mysqlDB) Count(t testing.TB, table, where string, args ...any) int {
	return mysqltest.Count(t, d.DB, table, where, args...)
}

func (d mysqlDB) Hold(t testing.TB, query string) (release func()) {
	ctx := context.Background()
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, query); err != nil {
		_ = tx.Rollback()
		t.Fatalf("%s: %v", query, err)
	}
	return func() { _ = tx.Rollback() }
}

func (d mysqlDB) Store(t testing.TB, c sqlfamilytest.StoreConfig) (sqlfamilytest.Store, string) {
	var opts []mysqlstore.Option
	if c.PurgeInterval > 0 {
		opts = append(opts, mysqlstore.WithPurgeInterval(c.PurgeInterval))
	}
	if c.PurgeBatch > 0 {
		opts = append(opts, mysqlstore.WithPurgeBatch(c.PurgeBatch))
	}
	if c.ReadLanes > 0 {
		opts = append(opts, mysqlstore.WithReadLanes(c.ReadLanes))
	}
	s, table := mysqltest.Store(t, d.DB, opts...)
	return s, table
}

func (d mysqlDB) NewStore(table string) sqlfamilytest.Store {
	return mysqlstore.New(d.DB, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1))
}

func (d mysqlDB) Payments(t testing.TB) string {
	t.Helper()
	name := mysqltest.Name(t) + "_pay"
	mysqltest.Exec(t, d.DB, "CREATE TABLE `"+name+"` (id BIGINT AUTO_INCREMENT PRIMARY KEY, `key` VARBINARY(600) NOT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, d.DB, name) })
	return name
}

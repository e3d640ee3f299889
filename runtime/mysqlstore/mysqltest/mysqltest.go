// Package mysqltest gives mysqlstore's tests a MySQL (MariaDB) to talk to:
// the server named by MYSQL_DSN (scripts/test.sh starts a private one),
// with a table of the test's own for the records, and private servers that
// a test starts, stops, kills and restarts. Tests sharing one server keep
// apart by table name, so packages can run in parallel.
//
// It is for tests and benchmarks: a service never imports it. A package of
// the mysqlstore module, it adds no module to a user's graph; not an
// internal one, because the end-to-end tests and the benchmarks, in modules
// of their own, use it too.
package mysqltest

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

// DSN returns MYSQL_DSN (a go-sql-driver/mysql DSN, such as
// "idem@tcp(127.0.0.1:3306)/idem"). Without it it skips the test, or fails
// it when CI=true, where a real MariaDB is mandatory.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MYSQL_DSN not set, and CI=true requires a real MariaDB: run scripts/test.sh")
		}
		t.Skip("MYSQL_DSN not set: start MariaDB or run scripts/test.sh")
	}
	return dsn
}

// DB returns a pool of MYSQL_DSN (see [DSN]) with at most maxConns
// connections (0: no limit), closed when the test ends. An unreachable
// server fails the test.
func DB(t testing.TB, maxConns int) *sql.DB {
	t.Helper()
	return DBOf(t, DSN(t), maxConns)
}

// DBOf is [DB] of the server at dsn.
func DBOf(t testing.TB, dsn string, maxConns int) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("MySQL DSN %s: %v", dsn, err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("MySQL DSN %s: %v", dsn, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(max(maxConns, 16))
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("MySQL DSN %s: %v", dsn, err)
	}
	return db
}

// Name returns a table name unique to this test run, such as
// "t_testacquire_3f2a9c1e": lower case, a plain identifier short enough for
// the store's suffixes.
func Name(t testing.TB) string {
	t.Helper()
	return sqlfamilytest.TableName(t, 24)
}

// Store returns a store on db over a records table of the test's own,
// created now and dropped when the test ends, and the table's name. The
// background purge is off unless opts turn it on.
func Store(t testing.TB, db *sql.DB, opts ...mysqlstore.Option) (*mysqlstore.Store, string) {
	t.Helper()
	table := Name(t)
	opts = append([]mysqlstore.Option{mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1)}, opts...)
	s := mysqlstore.New(db, opts...)
	if err := s.CreateSchema(context.Background()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		Drop(t, db, table)
		Drop(t, db, table+"_steps")
	})
	return s, table
}

// Exec runs query on db, failing the test on an error.
func Exec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// Drop drops table if it exists (at cleanup, errors are ignored: the
// server may be gone).
func Drop(t testing.TB, db *sql.DB, table string) {
	_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS `"+table+"`")
}

// Count returns the number of rows of table matching where (SQL, with args).
func Count(t testing.TB, db *sql.DB, table, where string, args ...any) int {
	t.Helper()
	var n int
	query := "SELECT count(*) FROM `" + table + "` WHERE " + where
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

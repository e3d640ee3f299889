// Package pgtest gives pgstore's tests a PostgreSQL to talk to: the server
// named by DATABASE_URL (scripts/test.sh starts a private one), with a table
// of the test's own for the records, and private clusters that a test
// starts, stops and crashes. Tests sharing one server keep apart by table
// name, so packages can run in parallel.
//
// It is for tests and benchmarks: a service never imports it. A package of
// the pgstore module, it adds no module to a user's graph; not an internal
// one, because the end-to-end tests, the benchmarks and the examples, in
// modules of their own, use it too.
package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// URL returns DATABASE_URL. Without it it skips the test, or fails it when
// CI=true, where real PostgreSQL is mandatory.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL not set, and CI=true requires real PostgreSQL: run scripts/test.sh")
		}
		t.Skip("DATABASE_URL not set: start PostgreSQL or run scripts/test.sh")
	}
	return url
}

// Pool returns a pool of DATABASE_URL (see [URL]) with at least maxConns
// connections (0: the pool's default), closed when the test ends. An
// unreachable server fails the test.
func Pool(t testing.TB, maxConns int) *pgxpool.Pool {
	t.Helper()
	return PoolOf(t, URL(t), maxConns)
}

// PoolOf is [Pool] of the server at url.
func PoolOf(t testing.TB, url string, maxConns int) *pgxpool.Pool {
	t.Helper()
	return poolOf(t, url, maxConns, nil)
}

func poolOf(t testing.TB, url string, maxConns int, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("database URL %s: %v", url, err)
	}
	if maxConns > 0 {
		cfg.MaxConns = int32(maxConns)
	}
	cfg.ConnConfig.Tracer = tracer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("database URL %s: %v", url, err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("database URL %s: %v", url, err)
	}
	return pool
}

// Name returns a table name unique to this test run, such as
// "t_testacquire_3f2a9c1e": lower case, a plain identifier.
func Name(t testing.TB) string {
	t.Helper()
	return sqlfamilytest.TableName(t, 30)
}

// Store returns a store on pool over a records table of the test's own,
// created now and dropped when the test ends, and the table's name. The
// background purge is off unless opts turn it on.
func Store(t testing.TB, pool *pgxpool.Pool, opts ...pgstore.Option) (*pgstore.Store, string) {
	t.Helper()
	table := Name(t)
	opts = append([]pgstore.Option{pgstore.WithTable(table), pgstore.WithPurgeInterval(-1)}, opts...)
	s := pgstore.New(pool, opts...)
	ctx := context.Background()
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		Drop(t, pool, table)
		Drop(t, pool, table+"_steps")
	})
	return s, table
}

// Exec runs sql on pool, failing the test on an error.
func Exec(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Drop drops table if it exists (at cleanup, errors are ignored: the
// server may be gone).
func Drop(t testing.TB, pool *pgxpool.Pool, table string) {
	_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
}

// Count returns the number of rows of table matching where (SQL, with args).
func Count(t testing.TB, pool *pgxpool.Pool, table, where string, args ...any) int {
	t.Helper()
	var n int
	sql := "SELECT count(*) FROM " + pgx.Identifier{table}.Sanitize() + " WHERE " + where
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

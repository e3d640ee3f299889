package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestCreateSchemaConcurrently: eight replicas starting at once each call
// CreateSchema on a table that does not exist yet, each through a pool of
// its own; all of them succeed, round after round. (CREATE TABLE IF NOT
// EXISTS alone lets them all find no table and then fail on the catalog's
// unique index of type names, 23505 on pg_type, all but one.)
//
// To make them meet every round, on a private server (event triggers want
// a superuser), an event trigger holds each CREATE TABLE of the test's
// schema at its end, before its transaction commits, on a lock the test
// holds until all eight wait on a lock: the first to create the table waits
// there, and the others, without the fix, wait on the catalog's index for
// its row.
func TestCreateSchemaConcurrently(t *testing.T) {
	const replicas, rounds = 8, 5
	url := pgtest.StartServer(t).URL()
	admin := pgtest.PoolOf(t, url, 2)
	ctx := context.Background()
	schema := pgtest.Name(t)
	pgtest.Exec(t, admin, "CREATE SCHEMA "+schema)
	pgtest.Exec(t, admin, `CREATE FUNCTION hold_create() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
	IF current_query() LIKE '%`+schema+`%' THEN PERFORM pg_advisory_xact_lock_shared(4242); END IF;
END$$`)
	pgtest.Exec(t, admin, "CREATE EVENT TRIGGER hold_create ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION hold_create()")
	table := schema + ".records"
	stores := make([]*pgstore.Store, replicas)
	for i := range stores {
		stores[i] = pgstore.New(pgtest.PoolOf(t, url, 1), pgstore.WithTable(table), pgstore.WithPurgeInterval(-1))
	}
	for round := range rounds {
		pgtest.Exec(t, admin, "DROP TABLE IF EXISTS "+table)
		hold, err := admin.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.Exec(ctx, "SELECT pg_advisory_xact_lock(4242)"); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() { errs[i] = s.CreateSchema(ctx) })
		}
		waitForLockWaiters(t, admin, schema, replicas)
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		failed := 0
		for i, err := range errs {
			if err != nil {
				failed++
				t.Errorf("round %d, replica %d: CreateSchema: %v", round+1, i+1, err)
			}
		}
		if err := stores[0].Check(ctx); err != nil {
			t.Errorf("round %d: Check after the race: %v", round+1, err)
		}
		if failed > 0 {
			t.Fatalf("round %d: %d of %d replicas failed", round+1, failed, replicas)
		}
	}
}

// waitForLockWaiters waits until n backends whose statement names schema
// wait on a lock (10 s at most).
func waitForLockWaiters(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, schema).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d CreateSchema calls wait on the schema's lock after 10 s", waiting, n)
		}
		time.Sleep(time.Millisecond) // polling the condition, not standing in for it
	}
}

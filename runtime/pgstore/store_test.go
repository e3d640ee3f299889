package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// lapse moves key's lease deadline (and, with expire, its expiry) into the
// past, or every record's when key is "": the database's clock, moved for
// those rows.
func lapse(t *testing.T, s string, pool *pgxpool.Pool, key string, expire bool) {
	t.Helper()
	set := "lease_until = statement_timestamp() - interval '1 millisecond'"
	if expire {
		set += ", expires_at = statement_timestamp() - interval '1 millisecond'"
	}
	if key == "" {
		pgtest.Exec(t, pool, "UPDATE "+pgx.Identifier{s}.Sanitize()+" SET "+set)
		return
	}
	pgtest.Exec(t, pool, "UPDATE "+pgx.Identifier{s}.Sanitize()+" SET "+set+" WHERE key = $1", key)
}

func acquire(t *testing.T, s *pgstore.Store, key, token, fp string) idemstore.Acquisition {
	t.Helper()
	acq, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: fp, Lease: time.Minute})
	if err != nil {
		t.Fatalf("acquire %s/%s: %v", key, token, err)
	}
	return acq
}

func TestTransitions(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	ctx := context.Background()

	if a := acquire(t, s, "k", "t1", "fp"); a.Outcome != idemstore.OutcomeFirstRun || a.Fence != 1 {
		t.Fatalf("first acquire = %+v, want proceed fence 1", a)
	}
	a := acquire(t, s, "k", "t2", "fp")
	if a.Outcome != idemstore.OutcomeConflict || a.Remaining <= 50*time.Second || a.Remaining > time.Minute {
		t.Fatalf("duplicate = %+v, want conflict with about a minute left", a)
	}
	if a := acquire(t, s, "k", "t2", "other"); a.Outcome != idemstore.OutcomeMismatch {
		t.Fatalf("other fingerprint = %+v, want mismatch", a)
	}
	if err := s.Complete(ctx, "k", "t2", &idemstore.Record{Status: 201}, time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("complete by a non-owner = %v, want ErrNotOwner", err)
	}
	if err := s.Extend(ctx, "k", "t2", time.Minute); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("extend by a non-owner = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, "k", "t2"); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("release by a non-owner = %v, want ErrNotOwner", err)
	}

	// A lapsed lease is taken over with the next fence; the old owner is out.
	lapse(t, table, pool, "k", false)
	if a := acquire(t, s, "k", "t3", "fp"); a.Outcome != idemstore.OutcomeRecovered || a.Fence != 2 {
		t.Fatalf("after the lease = %+v, want recovered fence 2", a)
	}
	if err := s.Extend(ctx, "k", "t1", time.Minute); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("extend by the stale owner = %v, want ErrNotOwner", err)
	}
	if err := s.Extend(ctx, "k", "t3", time.Minute); err != nil {
		t.Fatalf("extend by the owner: %v", err)
	}
	rec := &idemstore.Record{Status: 201, Header: http.Header{"Location": {"/pets/1"}}, Body: []byte(`{"id":1}`)}
	if err := s.Complete(ctx, "k", "t1", rec, time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("complete by the stale owner = %v, want ErrNotOwner", err)
	}
	if err := s.Complete(ctx, "k", "t3", rec, time.Hour); err != nil {
		t.Fatalf("complete by the owner: %v", err)
	}
	a = acquire(t, s, "k", "t4", "fp")
	if a.Outcome != idemstore.OutcomeReplay || a.Record.Status != 201 || a.Record.Header.Get("Location") != "/pets/1" || !bytes.Equal(a.Record.Body, rec.Body) {
		t.Fatalf("after completion = %+v, want the replay of %+v", a, rec)
	}
	if err := s.Release(ctx, "k", "t3"); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("release of a completed record = %v, want ErrNotOwner", err)
	}
	if a := acquire(t, s, "k", "t4", "other"); a.Outcome != idemstore.OutcomeMismatch {
		t.Fatalf("completed, other fingerprint = %+v, want mismatch", a)
	}

	// Past its retention a record is gone at once, purged or not.
	lapse(t, table, pool, "k", true)
	if a := acquire(t, s, "k", "t5", "other"); a.Outcome != idemstore.OutcomeFirstRun || a.Fence != 1 {
		t.Fatalf("after the retention = %+v, want proceed fence 1", a)
	}

	// Release lets the next attempt start afresh.
	if err := s.Release(ctx, "k", "t5"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if a := acquire(t, s, "k", "t6", "fp"); a.Outcome != idemstore.OutcomeFirstRun || a.Fence != 1 {
		t.Fatalf("after release = %+v, want proceed fence 1", a)
	}
	// An omitted body and an empty one replay as such.
	if err := s.Complete(ctx, "k", "t6", &idemstore.Record{Status: 204, BodyOmitted: true}, time.Hour); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if a := acquire(t, s, "k", "t7", "fp"); a.Outcome != idemstore.OutcomeReplay || !a.Record.BodyOmitted || a.Record.Status != 204 {
		t.Fatalf("omitted body = %+v", a)
	}
}

func TestPurge(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool, pgstore.WithPurgeBatch(3))
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "live"} {
		acquire(t, s, k, "t", "fp")
		if k != "live" {
			lapse(t, table, pool, k, true)
		}
	}
	n, err := s.Purge(ctx)
	if err != nil || n != 7 {
		t.Fatalf("purge = %d, %v; want 7 expired records deleted", n, err)
	}
	if got := pgtest.Count(t, pool, table, "true"); got != 1 {
		t.Fatalf("%d rows left, want the live one", got)
	}
	if n, err := s.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want nothing", n, err)
	}
}

// TestPurgeSkipsLockedRows: a purge does not wait for a row another
// transaction holds (another instance's purge, an acquire taking it over).
func TestPurgeSkipsLockedRows(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	ctx := context.Background()
	acquire(t, s, "held", "t", "fp")
	acquire(t, s, "free", "t", "fp")
	lapse(t, table, pool, "held", true)
	lapse(t, table, pool, "free", true)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+table+" WHERE key = 'held' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want the free row only", n, err)
	}
	_ = tx.Rollback(ctx)
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge after the lock = %d, %v; want the other row", n, err)
	}
}

func TestCheck(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	ctx := context.Background()
	s, table := pgtest.Store(t, pool)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check of a created table: %v", err)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatalf("CreateSchema again: %v", err)
	}

	missing := pgstore.New(pool, pgstore.WithTable(pgtest.Name(t)), pgstore.WithPurgeInterval(-1))
	err := missing.Check(ctx)
	if !errors.Is(err, idem.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "CreateSchema") {
		t.Fatalf("check of a missing table = %v", err)
	}
	_, err = missing.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "fp"})
	if !errors.Is(err, idem.ErrStoreMisconfigured) {
		t.Fatalf("acquire on a missing table = %v, want ErrStoreMisconfigured", err)
	}

	pgtest.Exec(t, pool, "ALTER TABLE "+table+" DROP COLUMN body_omitted, ALTER COLUMN fence TYPE integer")
	err = s.Check(ctx)
	if !errors.Is(err, idem.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "add column body_omitted boolean") ||
		!strings.Contains(err.Error(), "column fence is integer, want bigint") {
		t.Fatalf("check of a changed table = %v", err)
	}

	if err := pgstore.New(pool, pgstore.WithTable("a.b.c")).Check(ctx); err == nil || !strings.Contains(err.Error(), "at most one dot") {
		t.Fatalf("bad table name = %v", err)
	}
}

func TestCheckRights(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	ctx := context.Background()
	_, table := pgtest.Store(t, pool)
	role := pgtest.Name(t)
	pgtest.Exec(t, pool, "CREATE ROLE "+role)
	t.Cleanup(func() { pgtest.Exec(t, pool, "DROP OWNED BY "+role+"; DROP ROLE "+role) })
	pgtest.Exec(t, pool, "GRANT SELECT, UPDATE ON "+table+" TO "+role)
	// Check runs as the pool's user: SET ROLE on a pool of one connection
	// makes it the role without the rights.
	one := pgtest.Pool(t, 1)
	if _, err := one.Exec(ctx, "SET ROLE "+role); err != nil {
		t.Fatal(err)
	}
	err := pgstore.New(one, pgstore.WithTable(table)).Check(ctx)
	if !errors.Is(err, idem.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "GRANT INSERT, DELETE ON "+table) {
		t.Fatalf("check without INSERT and DELETE = %v", err)
	}
}

func TestSchemaUnderAnotherName(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	ctx := context.Background()
	schema := pgtest.Name(t)
	pgtest.Exec(t, pool, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { pgtest.Exec(t, pool, "DROP SCHEMA "+schema+" CASCADE") })
	s := pgstore.New(pool, pgstore.WithTable(schema+".records"), pgstore.WithPurgeInterval(-1))
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if a := acquire(t, s, "k", "t", "fp"); a.Outcome != idemstore.OutcomeFirstRun {
		t.Fatalf("acquire = %+v", a)
	}
}

// TestBackgroundPurge: from its first acquire the store purges expired
// records by itself, until Close.
func TestBackgroundPurge(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool, pgstore.WithPurgeInterval(10*time.Millisecond))
	acquire(t, s, "old", "t", "fp")
	lapse(t, table, pool, "old", true)
	acquire(t, s, "live", "t", "fp")
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for pgtest.Count(t, pool, table, "key = 'old'") != 0 { // until the purge has run; the test's timeout bounds it
		<-tick.C
	}
	s.Close()
	if n := pgtest.Count(t, pool, table, "true"); n != 1 {
		t.Fatalf("%d records, want the live one", n)
	}
}

// TestUnreachable: a database that does not answer is a store failure,
// not a misconfiguration, for every call and for Check.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	pool, err := pgxpool.New(context.Background(), "postgres://idem@"+addr+"/postgres?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := pgstore.New(pool, pgstore.WithPurgeInterval(-1))
	defer s.Close()
	ctx := context.Background()
	_, aerr := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "fp"})
	cerr := s.Check(ctx)
	for name, err := range map[string]error{"acquire": aerr, "check": cerr} {
		if !errors.Is(err, idem.ErrStoreUnavailable) || errors.Is(err, idem.ErrStoreMisconfigured) {
			t.Errorf("%s on a closed port = %v, want ErrStoreUnavailable only", name, err)
		}
	}
}

// TestFingerprintBeforeTheAPIRefused: a row holding the request's
// fingerprint as it was before fingerprints covered the API identity is
// another request's (as a colliding API's is): refused while completed,
// and answered a conflict, not taken over, while in progress; the store has
// no other fingerprint to accept (issue 44).
func TestFingerprintBeforeTheAPIRefused(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	ctx := context.Background()
	req := func(key, token string) idemstore.AcquireRequest {
		return idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: "new", Lease: time.Minute}
	}
	for _, k := range []string{"done", "lapsed"} {
		if a := acquire(t, s, k, "old", "old"); a.Outcome != idemstore.OutcomeFirstRun {
			t.Fatalf("%s: %+v", k, a)
		}
	}
	if err := s.Complete(ctx, "done", "old", &idemstore.Record{Status: 201, Body: []byte("paid")}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Acquire(ctx, req("done", "t")); err != nil || a.Outcome != idemstore.OutcomeMismatch {
		t.Errorf("completed with the fingerprint before the API: %+v, %v; want mismatch", a, err)
	}
	lapse(t, table, pool, "lapsed", false)
	if a, err := s.Acquire(ctx, req("lapsed", "t")); err != nil || a.Outcome != idemstore.OutcomeMismatch {
		t.Errorf("lapsed with the fingerprint before the API: %+v, %v; want mismatch", a, err)
	}
}

// takeOver has t1 acquire k through Store.Acquire, lets its lease lapse,
// and returns the run of t2 that takes k over (Recovered).
func takeOver(t *testing.T, s *pgstore.Store, table string, pool *pgxpool.Pool) (idemstore.Acquisition, idemstore.RunTx) {
	t.Helper()
	acquire(t, s, "k", "t1", "fp")
	lapse(t, table, pool, "k", false)
	acq, run, err := s.AcquireRun(context.Background(), idemstore.AcquireRequest{Key: "k", Token: "t2", Fingerprint: "fp", Lease: time.Minute})
	if err != nil || run == nil || acq.Outcome != idemstore.OutcomeRecovered {
		t.Fatalf("takeover: %+v, %v, %v; want a Recovered run", acq, run, err)
	}
	return acq, run
}

// TestTakeoverLosesToTheOwnerThatCompletes: a run that takes over a
// record Acquire committed, whose lease lapsed, holds nothing of that
// record until it commits (its claim writes nothing). If the old owner
// completes meanwhile, the run's completion refuses to overwrite the live
// record: its Commit returns ErrNotOwner, its own writes roll back, and
// the old owner's answer stays. At most one completion, either way.
func TestTakeoverLosesToTheOwnerThatCompletes(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	pay := payments(t, pool)
	ctx := context.Background()
	acq, run := takeOver(t, s, table, pool)
	if _, err := pgstore.Tx(run.Context(ctx)).Exec(ctx, "INSERT INTO "+pgx.Identifier{pay}.Sanitize()+" (key, fence) VALUES ('k', $1)", acq.Fence); err != nil {
		t.Fatal(err)
	}
	old := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"X-Owner": {"t1"}}, Body: []byte("t1")}
	if err := s.Complete(ctx, "k", "t1", old, time.Hour); err != nil {
		t.Fatalf("the old owner's completion, while the run is open: %v", err)
	}
	mine := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"X-Owner": {"t2"}}, Body: []byte("t2")}
	if err := run.Commit(ctx, mine, time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("the run's commit over the old owner's answer: %v, want ErrNotOwner", err)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 0 {
		t.Errorf("%d payments; want the run's rolled back", n)
	}
	replay := acquire(t, s, "k", "t3", "fp")
	if replay.Outcome != idemstore.OutcomeReplay || string(replay.Record.Body) != "t1" {
		t.Errorf("afterwards: %+v; want the old owner's answer replayed", replay)
	}
}

// TestTakeoverWinsOverALateOwner: the same takeover, committed first; the
// old owner's completion after it is refused.
func TestTakeoverWinsOverALateOwner(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	ctx := context.Background()
	_, run := takeOver(t, s, table, pool)
	if err := run.Commit(ctx, &idemstore.Record{Status: http.StatusCreated, Body: []byte("t2")}, time.Hour); err != nil {
		t.Fatalf("the run's commit: %v", err)
	}
	if err := s.Complete(ctx, "k", "t1", &idemstore.Record{Status: http.StatusCreated, Body: []byte("t1")}, time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("the old owner's late completion: %v, want ErrNotOwner", err)
	}
	if replay := acquire(t, s, "k", "t3", "fp"); replay.Outcome != idemstore.OutcomeReplay || string(replay.Record.Body) != "t2" {
		t.Errorf("afterwards: %+v; want the run's answer replayed", replay)
	}
}

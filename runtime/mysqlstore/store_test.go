package mysqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/internal/mysqltest"
)

// lapse moves key's lease deadline (and, with expire, its expiry) into the
// past, or every record's when key is "": the database's clock, moved for
// those rows.
func lapse(t *testing.T, s string, db *sql.DB, key string, expire bool) {
	t.Helper()
	set := "lease_until = UTC_TIMESTAMP(6) - INTERVAL 1000 MICROSECOND"
	if expire {
		set += ", expires_at = UTC_TIMESTAMP(6) - INTERVAL 1000 MICROSECOND"
	}
	if key == "" {
		mysqltest.Exec(t, db, "UPDATE `"+s+"` SET "+set)
		return
	}
	mysqltest.Exec(t, db, "UPDATE `"+s+"` SET "+set+" WHERE `key` = ?", key)
}

func acquire(t *testing.T, s *mysqlstore.Store, key, token, fp string) idemstore.Acquisition {
	t.Helper()
	acq, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: fp, Lease: time.Minute})
	if err != nil {
		t.Fatalf("acquire %s/%s: %v", key, token, err)
	}
	return acq
}

func TestTransitions(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
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
	lapse(t, table, db, "k", false)
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
	lapse(t, table, db, "k", true)
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
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db, mysqlstore.WithPurgeBatch(3))
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "live"} {
		acquire(t, s, k, "t", "fp")
		if k != "live" {
			lapse(t, table, db, k, true)
		}
	}
	n, err := s.Purge(ctx)
	if err != nil || n != 7 {
		t.Fatalf("purge = %d, %v; want 7 expired records deleted", n, err)
	}
	if got := mysqltest.Count(t, db, table, "true"); got != 1 {
		t.Fatalf("%d rows left, want the live one", got)
	}
	if n, err := s.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want nothing", n, err)
	}
}

// TestPurgeSkipsLockedRows: a purge does not wait for a row another
// transaction holds (another instance's purge, an acquire taking it over).
func TestPurgeSkipsLockedRows(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	ctx := context.Background()
	acquire(t, s, "held", "t", "fp")
	acquire(t, s, "free", "t", "fp")
	lapse(t, table, db, "held", true)
	lapse(t, table, db, "free", true)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM `"+table+"` WHERE `key` = 'held' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want the free row only", n, err)
	}
	_ = tx.Rollback()
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge after the lock = %d, %v; want the other row", n, err)
	}
}

func TestCheck(t *testing.T) {
	db := mysqltest.DB(t, 0)
	ctx := context.Background()
	s, table := mysqltest.Store(t, db)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check of a created table: %v", err)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatalf("CreateSchema again: %v", err)
	}

	missing := mysqlstore.New(db, mysqlstore.WithTable(mysqltest.Name(t)), mysqlstore.WithPurgeInterval(-1))
	err := missing.Check(ctx)
	if !errors.Is(err, idem.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "CreateSchema") {
		t.Fatalf("check of a missing table = %v", err)
	}
	_, err = missing.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "fp"})
	if !errors.Is(err, idem.ErrStoreMisconfigured) {
		t.Fatalf("acquire on a missing table = %v, want ErrStoreMisconfigured", err)
	}

	mysqltest.Exec(t, db, "ALTER TABLE `"+table+"` DROP COLUMN body_omitted, MODIFY fence INT NOT NULL")
	err = s.Check(ctx)
	if !errors.Is(err, idem.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "add column body_omitted (ALTER TABLE "+table+" ADD `body_omitted` BOOLEAN NOT NULL DEFAULT 0)") ||
		!strings.Contains(err.Error(), "column fence is int(11), want BIGINT NOT NULL") {
		t.Fatalf("check of a changed table = %v", err)
	}

	if err := mysqlstore.New(db, mysqlstore.WithTable("a.b.c")).Check(ctx); err == nil || !strings.Contains(err.Error(), "at most one dot") {
		t.Fatalf("bad table name = %v", err)
	}
}

func TestSchemaUnderAnotherName(t *testing.T) {
	db := mysqltest.DB(t, 0)
	ctx := context.Background()
	schema := mysqltest.Name(t)
	mysqltest.Exec(t, db, "CREATE DATABASE "+schema)
	t.Cleanup(func() { mysqltest.Exec(t, db, "DROP DATABASE "+schema) })
	s := mysqlstore.New(db, mysqlstore.WithTable(schema+".records"), mysqlstore.WithPurgeInterval(-1))
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
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db, mysqlstore.WithPurgeInterval(10*time.Millisecond))
	acquire(t, s, "old", "t", "fp")
	lapse(t, table, db, "old", true)
	acquire(t, s, "live", "t", "fp")
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for mysqltest.Count(t, db, table, "`key` = 'old'") != 0 { // until the purge has run; the test's timeout bounds it
		<-tick.C
	}
	s.Close()
	if n := mysqltest.Count(t, db, table, "true"); n != 1 {
		t.Fatalf("%d records, want the live one", n)
	}
}

// TestClosed: Close closes the store's prepared statements, and a call
// after it fails, saying the store is closed, instead of preparing them
// again (which would stay open on the pool's connections until the pool
// closed).
func TestClosed(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db, mysqlstore.WithPurgeInterval(-1))
	ctx := context.Background()
	acquire(t, s, "before", "t", "fp")
	s.ReadBatch(ctx, []string{"before", "other"}, []string{"fp", "fp"})
	if n := s.OpenStatements(); n != 2 {
		t.Fatalf("%d sets of statements prepared before Close, want 2 (the common path's and a batch's)", n)
	}
	_, open, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "open", Token: "t", Fingerprint: "fp"})
	if err != nil || open == nil {
		t.Fatalf("acquire run before Close: %v", err)
	}
	s.Close()
	cerr := open.Commit(ctx, &idemstore.Record{Status: http.StatusCreated}, time.Hour)
	_, aerr := s.Acquire(ctx, idemstore.AcquireRequest{Key: "after", Token: "t", Fingerprint: "fp"})
	_, run, rerr := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "after", Token: "t", Fingerprint: "fp"})
	if run != nil {
		_ = run.Rollback(ctx)
	}
	batch := s.ReadBatch(ctx, []string{"after", "other"}, []string{"fp", "fp"})
	for name, err := range map[string]error{"acquire": aerr, "acquire run": rerr, "batched read": batch[0].Err, "commit of a run open at Close": cerr} {
		if !errors.Is(err, idem.ErrStoreUnavailable) || !strings.Contains(err.Error(), "store is closed") {
			t.Errorf("%s after Close = %v, want ErrStoreUnavailable saying the store is closed", name, err)
		}
	}
	if n := s.OpenStatements(); n != 0 {
		t.Errorf("%d sets of statements prepared after Close, want none", n)
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
	db, err := sql.Open("mysql", "idem@tcp("+addr+")/idem?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := mysqlstore.New(db, mysqlstore.WithPurgeInterval(-1))
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

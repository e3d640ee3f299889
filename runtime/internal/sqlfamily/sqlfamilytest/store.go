package sqlfamilytest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// testTransitions: every transition of the state machine, by Acquire,
// Complete, Extend and Release, on the store's table.
func testTransitions(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	ctx := context.Background()

	if a := Acquire(t, s, "k", "t1", "fp"); a.Outcome != idemstore.OutcomeFirstRun || a.Fence != 1 {
		t.Fatalf("first acquire = %+v, want proceed fence 1", a)
	}
	a := Acquire(t, s, "k", "t2", "fp")
	if a.Outcome != idemstore.OutcomeConflict || a.Remaining <= 50*time.Second || a.Remaining > time.Minute {
		t.Fatalf("duplicate = %+v, want conflict with about a minute left", a)
	}
	if a := Acquire(t, s, "k", "t2", "other"); a.Outcome != idemstore.OutcomeMismatch {
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
	Lapse(t, d, db, table, "k", false)
	if a := Acquire(t, s, "k", "t3", "fp"); a.Outcome != idemstore.OutcomeRecovered || a.Fence != 2 {
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
	a = Acquire(t, s, "k", "t4", "fp")
	if a.Outcome != idemstore.OutcomeReplay || a.Record.Status != 201 || a.Record.Header.Get("Location") != "/pets/1" || !bytes.Equal(a.Record.Body, rec.Body) {
		t.Fatalf("after completion = %+v, want the replay of %+v", a, rec)
	}
	if err := s.Release(ctx, "k", "t3"); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("release of a completed record = %v, want ErrNotOwner", err)
	}
	if a := Acquire(t, s, "k", "t4", "other"); a.Outcome != idemstore.OutcomeMismatch {
		t.Fatalf("completed, other fingerprint = %+v, want mismatch", a)
	}

	// Past its retention a record is gone at once, purged or not.
	Lapse(t, d, db, table, "k", true)
	if a := Acquire(t, s, "k", "t5", "other"); a.Outcome != idemstore.OutcomeFirstRun || a.Fence != 1 {
		t.Fatalf("after the retention = %+v, want proceed fence 1", a)
	}

	// Release lets the next attempt start afresh.
	if err := s.Release(ctx, "k", "t5"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if a := Acquire(t, s, "k", "t6", "fp"); a.Outcome != idemstore.OutcomeFirstRun || a.Fence != 1 {
		t.Fatalf("after release = %+v, want proceed fence 1", a)
	}
	// An omitted body and an empty one replay as such.
	if err := s.Complete(ctx, "k", "t6", &idemstore.Record{Status: 204, BodyOmitted: true}, time.Hour); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if a := Acquire(t, s, "k", "t7", "fp"); a.Outcome != idemstore.OutcomeReplay || !a.Record.BodyOmitted || a.Record.Status != 204 {
		t.Fatalf("omitted body = %+v", a)
	}
}

// testPurge: Purge deletes the expired records, in batches, and only them.
func testPurge(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{PurgeBatch: 3})
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "live"} {
		Acquire(t, s, k, "t", "fp")
		if k != "live" {
			Lapse(t, d, db, table, k, true)
		}
	}
	n, err := s.Purge(ctx)
	if err != nil || n != 7 {
		t.Fatalf("purge = %d, %v; want 7 expired records deleted", n, err)
	}
	if got := db.Count(t, table, "true"); got != 1 {
		t.Fatalf("%d rows left, want the live one", got)
	}
	if n, err := s.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want nothing", n, err)
	}
}

// testPurgeSkipsLockedRows: a purge does not wait for a row another
// transaction holds (another instance's purge, an acquire taking it over).
func testPurgeSkipsLockedRows(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	ctx := context.Background()
	Acquire(t, s, "held", "t", "fp")
	Acquire(t, s, "free", "t", "fp")
	Lapse(t, d, db, table, "held", true)
	Lapse(t, d, db, table, "free", true)
	release := db.Hold(t, "SELECT 1 FROM "+d.Quote(table)+" WHERE "+d.Quote("key")+" = 'held' FOR UPDATE")
	defer release()
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want the free row only", n, err)
	}
	release()
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge after the lock = %d, %v; want the other row", n, err)
	}
}

// testBackgroundPurge: from its first acquire the store purges expired
// records by itself, until Close.
func testBackgroundPurge(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{PurgeInterval: 10 * time.Millisecond})
	Acquire(t, s, "old", "t", "fp")
	Lapse(t, d, db, table, "old", true)
	Acquire(t, s, "live", "t", "fp")
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for db.Count(t, table, d.Quote("key")+" = 'old'") != 0 { // until the purge has run; the test's timeout bounds it
		<-tick.C
	}
	s.Close()
	if n := db.Count(t, table, "true"); n != 1 {
		t.Fatalf("%d records, want the live one", n)
	}
}

// testCheck: Check passes on the table CreateSchema made (which it may
// make again); on a missing table, a changed one and a bad name it says
// what is wrong, and an acquire on a missing table is a misconfiguration.
func testCheck(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	ctx := context.Background()
	s, table := db.Store(t, StoreConfig{})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check of a created table: %v", err)
	}
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatalf("CreateSchema again: %v", err)
	}

	missing := db.NewStore(table + "_missing")
	defer missing.Close()
	err := missing.Check(ctx)
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "CreateSchema") {
		t.Fatalf("check of a missing table = %v", err)
	}
	_, err = missing.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "fp"})
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		t.Fatalf("acquire on a missing table = %v, want ErrStoreMisconfigured", err)
	}

	wants := d.ChangeColumns(t, db, table)
	err = s.Check(ctx)
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		t.Fatalf("check of a changed table = %v, want ErrStoreMisconfigured", err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check of a changed table = %v\nwant it to say %q", err, want)
		}
	}

	bad := db.NewStore("a.b.c")
	defer bad.Close()
	if err := bad.Check(ctx); err == nil || !strings.Contains(err.Error(), "at most one dot") {
		t.Fatalf("bad table name = %v", err)
	}
}

// testSchemaUnderAnotherName: a table named schema.table is created,
// checked and used there.
func testSchemaUnderAnotherName(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	ctx := context.Background()
	s := db.NewStore(d.CreateSchema(t, db) + ".records")
	defer s.Close()
	if err := s.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if a := Acquire(t, s, "k", "t", "fp"); a.Outcome != idemstore.OutcomeFirstRun {
		t.Fatalf("acquire = %+v", a)
	}
}

// testUnreachable: a database that does not answer is a store failure,
// not a misconfiguration, for every call and for Check.
func testUnreachable(t *testing.T, d Dialect) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	s := d.Unreachable(t, addr)
	defer s.Close()
	ctx := context.Background()
	_, aerr := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "fp"})
	cerr := s.Check(ctx)
	for name, err := range map[string]error{"acquire": aerr, "check": cerr} {
		if !errors.Is(err, idemstore.ErrStoreUnavailable) || errors.Is(err, idemstore.ErrStoreMisconfigured) {
			t.Errorf("%s on a closed port = %v, want ErrStoreUnavailable only", name, err)
		}
	}
}

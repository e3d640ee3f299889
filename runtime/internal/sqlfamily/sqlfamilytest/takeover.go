package sqlfamilytest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// testFingerprintBeforeTheAPIRefused: a row holding the request's
// fingerprint as it was before fingerprints covered the API identity is
// another request's (as a colliding API's is): refused while completed,
// and answered a mismatch, not taken over, once its lease lapsed; the
// store has no other fingerprint to accept.
func testFingerprintBeforeTheAPIRefused(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	ctx := context.Background()
	req := func(key, token string) idemstore.AcquireRequest {
		return idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: "new", Lease: time.Minute}
	}
	for _, k := range []string{"done", "lapsed"} {
		if a := Acquire(t, s, k, "old", "old"); a.Outcome != idemstore.OutcomeFirstRun {
			t.Fatalf("%s: %+v", k, a)
		}
	}
	if err := s.Complete(ctx, "done", "old", &idemstore.Record{Status: 201, Body: []byte("paid")}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Acquire(ctx, req("done", "t")); err != nil || a.Outcome != idemstore.OutcomeMismatch {
		t.Errorf("completed with the fingerprint before the API: %+v, %v; want mismatch", a, err)
	}
	Lapse(t, d, db, table, "lapsed", false)
	if a, err := s.Acquire(ctx, req("lapsed", "t")); err != nil || a.Outcome != idemstore.OutcomeMismatch {
		t.Errorf("lapsed with the fingerprint before the API: %+v, %v; want mismatch", a, err)
	}
}

// TakeOver has t1 acquire k through Store.Acquire, lets its lease lapse,
// and returns the run of t2 that takes k over (Recovered).
func TakeOver(t *testing.T, d Dialect, db DB, s Store, table string) (idemstore.Acquisition, idemstore.RunTx) {
	t.Helper()
	Acquire(t, s, "k", "t1", "fp")
	Lapse(t, d, db, table, "k", false)
	acq, run, err := s.AcquireRun(context.Background(), idemstore.AcquireRequest{Key: "k", Token: "t2", Fingerprint: "fp", Lease: time.Minute})
	if err != nil || run == nil || acq.Outcome != idemstore.OutcomeRecovered {
		t.Fatalf("takeover: %+v, %v, %v; want a Recovered run", acq, run, err)
	}
	return acq, run
}

// testTakeoverWinsOverALateOwner: the same takeover, committed first; the
// old owner's completion after it is refused.
func testTakeoverWinsOverALateOwner(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 0)
	s, table := db.Store(t, StoreConfig{})
	ctx := context.Background()
	_, run := TakeOver(t, d, db, s, table)
	if err := run.Commit(ctx, &idemstore.Record{Status: http.StatusCreated, Body: []byte("t2")}, time.Hour); err != nil {
		t.Fatalf("the run's commit: %v", err)
	}
	if err := s.Complete(ctx, "k", "t1", &idemstore.Record{Status: http.StatusCreated, Body: []byte("t1")}, time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("the old owner's late completion: %v, want ErrNotOwner", err)
	}
	if replay := Acquire(t, s, "k", "t3", "fp"); replay.Outcome != idemstore.OutcomeReplay || string(replay.Record.Body) != "t2" {
		t.Errorf("afterwards: %+v; want the run's answer replayed", replay)
	}
}

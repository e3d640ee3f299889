package pgstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// claimRun claims key for token with fingerprint fp through AcquireRun.
func claimRun(t *testing.T, s *pgstore.Store, key, token, fp string) (idemstore.Acquisition, idemstore.RunTx) {
	t.Helper()
	acq, tx, err := s.AcquireRun(context.Background(), idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: fp, Lease: time.Minute})
	if err != nil || tx == nil {
		t.Fatalf("AcquireRun %s/%s: %+v, %v, %v", key, token, acq, tx, err)
	}
	return acq, tx
}

// TestStepJournalOfAnOpenClaim: a run whose claim is held by its open
// transaction journals steps that commit on their own; a run that claims
// the key again with the same fingerprint, after the first rolled back
// (a crash), finds them, one with another fingerprint does not. A run
// whose transaction the server ended (its session terminated, as a frozen
// owner's is) journals nothing, and neither does a rolled-back run.
func TestStepJournalOfAnOpenClaim(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	ctx := context.Background()
	a, tx := claimRun(t, s, "k", "t1", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || len(got) != 0 {
		t.Fatalf("empty journal: %v, %v", got, err)
	}
	if err := sqlfamilytest.Step(s, "k", "t1", a.Fence, "charge", `"ch_1"`, nil); err != nil {
		t.Fatalf("step: %v", err)
	}
	want := map[string][]byte{"charge": []byte(`"ch_1"`)}
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %q, %v; want %q", got, err, want)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sqlfamilytest.Step(s, "k", "t1", a.Fence, "late", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step of a rolled-back run: %v, want ErrNotOwner", err)
	}

	b, tx := claimRun(t, s, "k", "t2", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t2"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("the next claim, same fingerprint: %q, %v; want %q", got, err, want)
	}
	// The server ends the run's session, as it ends a frozen owner's: the
	// one idle in a transaction whose last statement was on this test's
	// table, not another test's sharing the database.
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database() AND strpos(query, $1) > 0`, table).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, "SELECT pg_terminate_backend($1, 10000)", pid)
	if err := sqlfamilytest.Step(s, "k", "t2", b.Fence, "late", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step of a run whose session was ended: %v, want ErrNotOwner", err)
	}
	if err := tx.Commit(ctx, &idemstore.Record{Status: 201}, time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("Commit of a run whose session was ended: %v, want ErrNotOwner", err)
	}

	_, tx = claimRun(t, s, "k", "t3", "another")
	defer func() { _ = tx.Rollback(ctx) }()
	if got, err := s.LoadSteps(ctx, "k", "t3"); err != nil || len(got) != 0 {
		t.Errorf("a claim with another fingerprint: %q, %v; want none", got, err)
	}
}

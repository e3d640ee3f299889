package pgstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// step runs one step on s: fn's writes in the step's transaction, then the
// journal entry.
func step(s *pgstore.Store, key, token string, fence int64, name, result string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx := context.Background()
	st, err := s.BeginStep(ctx, key, token, fence)
	if err != nil {
		return err
	}
	if fn != nil {
		sctx := st.Context(ctx)
		if err := fn(sctx, pgstore.Tx(sctx)); err != nil {
			_ = st.Rollback(ctx)
			return err
		}
	}
	return st.Commit(ctx, name, []byte(result), time.Hour)
}

// TestStepJournal: the owner's steps are journaled and read back; another
// token or fence can neither read nor write them; a record released and
// created again with the same fingerprint finds them, one with another
// fingerprint does not.
func TestStepJournal(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, _ := pgtest.Store(t, pool)
	ctx := context.Background()
	a := acquire(t, s, "k", "t1", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || len(got) != 0 {
		t.Fatalf("empty journal: %v, %v", got, err)
	}
	for _, name := range []string{"reserve", "charge"} {
		if err := step(s, "k", "t1", a.Fence, name, `"`+name+`"`, nil); err != nil {
			t.Fatalf("step %s: %v", name, err)
		}
	}
	want := map[string][]byte{"reserve": []byte(`"reserve"`), "charge": []byte(`"charge"`)}
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %q, %v; want %q", got, err, want)
	}
	if _, err := s.LoadSteps(ctx, "k", "other"); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("load by another token: %v", err)
	}
	if err := step(s, "k", "other", a.Fence, "x", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step by another token: %v", err)
	}
	if err := step(s, "k", "t1", a.Fence+1, "x", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step with another fence: %v", err)
	}
	if err := s.Release(ctx, "k", "t1"); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "k", "t2", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t2"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a release, same fingerprint: %q, %v", got, err)
	}
	if err := s.Release(ctx, "k", "t2"); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "k", "t3", "another")
	if got, err := s.LoadSteps(ctx, "k", "t3"); err != nil || len(got) != 0 {
		t.Errorf("after a release, another fingerprint: %q, %v; want none", got, err)
	}
}

// TestStepCommitsItsWritesWithItsEntry: a step's own writes commit with
// its journal entry, before the run's transaction does; a stale owner's
// step is refused and its writes rolled back.
func TestStepCommitsItsWritesWithItsEntry(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	pay := payments(t, pool)
	insert := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{pay}.Sanitize()+" (key, fence) VALUES ('k', 1)")
		return err
	}
	a := acquire(t, s, "k", "t1", "fp")
	if err := step(s, "k", "t1", a.Fence, "pay", "1", insert); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Fatalf("%d payments after the step, want its 1 committed", n)
	}
	lapse(t, table, pool, "k", false)
	b := acquire(t, s, "k", "t2", "fp")
	if b.Outcome != idemstore.OutcomeRecovered {
		t.Fatalf("takeover: %+v", b)
	}
	if err := step(s, "k", "t1", a.Fence, "pay2", "1", insert); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("stale owner's step: %v, want ErrNotOwner", err)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Errorf("%d payments after the stale step, want its write rolled back", n)
	}
	if got, err := s.LoadSteps(context.Background(), "k", "t2"); err != nil || len(got) != 1 {
		t.Errorf("new owner's journal %q, %v; want the first step only", got, err)
	}
}

// TestStepsPurged: expired journal entries go with Purge.
func TestStepsPurged(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, table := pgtest.Store(t, pool)
	a := acquire(t, s, "k", "t1", "fp")
	if err := step(s, "k", "t1", a.Fence, "a", "1", nil); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, "UPDATE "+pgx.Identifier{table + "_steps"}.Sanitize()+" SET expires_at = statement_timestamp() - interval '1 second'")
	if _, err := s.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Count(t, pool, table+"_steps", "true"); n != 0 {
		t.Errorf("%d journal entries after the purge", n)
	}
}

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
	s, _ := pgtest.Store(t, pool)
	ctx := context.Background()
	a, tx := claimRun(t, s, "k", "t1", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || len(got) != 0 {
		t.Fatalf("empty journal: %v, %v", got, err)
	}
	if err := step(s, "k", "t1", a.Fence, "charge", `"ch_1"`, nil); err != nil {
		t.Fatalf("step: %v", err)
	}
	want := map[string][]byte{"charge": []byte(`"ch_1"`)}
	if got, err := s.LoadSteps(ctx, "k", "t1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %q, %v; want %q", got, err, want)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := step(s, "k", "t1", a.Fence, "late", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("step of a rolled-back run: %v, want ErrNotOwner", err)
	}

	b, tx := claimRun(t, s, "k", "t2", "fp")
	if got, err := s.LoadSteps(ctx, "k", "t2"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("the next claim, same fingerprint: %q, %v; want %q", got, err, want)
	}
	// The server ends the run's session, as it ends a frozen owner's.
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, "SELECT pg_terminate_backend($1, 10000)", pid)
	if err := step(s, "k", "t2", b.Fence, "late", "1", nil); !errors.Is(err, idemstore.ErrNotOwner) {
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

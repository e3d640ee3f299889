package mysqlstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/internal/mysqltest"
)

// step runs one step on s: fn's writes in the step's transaction, then the
// journal entry.
func step(s *mysqlstore.Store, key, token string, fence int64, name, result string, fn func(ctx context.Context, tx *mysqlstore.Transaction) error) error {
	ctx := context.Background()
	st, err := s.BeginStep(ctx, key, token, fence)
	if err != nil {
		return err
	}
	if fn != nil {
		sctx := st.Context(ctx)
		if err := fn(sctx, mysqlstore.Tx(sctx)); err != nil {
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
	db := mysqltest.DB(t, 0)
	s, _ := mysqltest.Store(t, db)
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
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	pay := payments(t, db)
	insert := func(ctx context.Context, tx *mysqlstore.Transaction) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO `"+pay+"` (`key`, fence) VALUES ('k', 1)")
		return err
	}
	a := acquire(t, s, "k", "t1", "fp")
	if err := step(s, "k", "t1", a.Fence, "pay", "1", insert); err != nil {
		t.Fatal(err)
	}
	if n := mysqltest.Count(t, db, pay, "true"); n != 1 {
		t.Fatalf("%d payments after the step, want its 1 committed", n)
	}
	lapse(t, table, db, "k", false)
	b := acquire(t, s, "k", "t2", "fp")
	if b.Outcome != idemstore.OutcomeRecovered {
		t.Fatalf("takeover: %+v", b)
	}
	if err := step(s, "k", "t1", a.Fence, "pay2", "1", insert); !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("stale owner's step: %v, want ErrNotOwner", err)
	}
	if n := mysqltest.Count(t, db, pay, "true"); n != 1 {
		t.Errorf("%d payments after the stale step, want its write rolled back", n)
	}
	if got, err := s.LoadSteps(context.Background(), "k", "t2"); err != nil || len(got) != 1 {
		t.Errorf("new owner's journal %q, %v; want the first step only", got, err)
	}
}

// TestStepsPurged: expired journal entries go with Purge.
func TestStepsPurged(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	a := acquire(t, s, "k", "t1", "fp")
	if err := step(s, "k", "t1", a.Fence, "a", "1", nil); err != nil {
		t.Fatal(err)
	}
	mysqltest.Exec(t, db, "UPDATE `"+table+"_steps` SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND")
	if _, err := s.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := mysqltest.Count(t, db, table+"_steps", "true"); n != 0 {
		t.Errorf("%d journal entries after the purge", n)
	}
}

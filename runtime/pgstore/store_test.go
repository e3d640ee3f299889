package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

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
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "GRANT INSERT, DELETE ON "+table) {
		t.Fatalf("check without INSERT and DELETE = %v", err)
	}
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
	pay := pgPool{pool}.Payments(t)
	ctx := context.Background()
	acq, run := sqlfamilytest.TakeOver(t, dialect{}, pgPool{pool}, s, table)
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
	replay := sqlfamilytest.Acquire(t, s, "k", "t3", "fp")
	if replay.Outcome != idemstore.OutcomeReplay || string(replay.Record.Body) != "t1" {
		t.Errorf("afterwards: %+v; want the old owner's answer replayed", replay)
	}
}

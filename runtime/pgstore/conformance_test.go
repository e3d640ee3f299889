package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestConformance runs the stores' conformance suite against the
// PostgreSQL store on DATABASE_URL (skipped when it is unset), the
// transactional checks with a table of marks that a run's transaction
// writes: a mark is committed with its run's record or not at all.
func TestConformance(t *testing.T) {
	pool := pgtest.Pool(t, 40) // the concurrent checks acquire from 32 goroutines
	store, table := pgtest.Store(t, pool)
	marks := pgx.Identifier{table + "_marks"}.Sanitize()
	pgtest.Exec(t, pool, "CREATE TABLE "+marks+" (mark text PRIMARY KEY)")
	t.Cleanup(func() { pgtest.Drop(t, pool, table+"_marks") })
	idemstoretest.Run(t, idemstoretest.Harness{
		New: func() (idemstore.Store, error) { return store, nil },
		TxWrite: func(ctx context.Context, mark string) error {
			_, err := pgstore.Tx(ctx).Exec(ctx, "INSERT INTO "+marks+" (mark) VALUES ($1)", mark)
			return err
		},
		TxMarked: func(ctx context.Context, mark string) (bool, error) {
			var marked bool
			err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+marks+" WHERE mark = $1)", mark).Scan(&marked)
			return marked, err
		},
	})
}

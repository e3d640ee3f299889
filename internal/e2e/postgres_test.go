package e2e_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// The postgres backend runs the scenarios on pgstore, whose runs are
// transactions: the shop's createOrder then also inserts its order through
// pgstore.Tx, and TestServer checks after each scenario that the orders
// table holds exactly one row per counted creation, in every server form.

// postgresBackend is pgstore on DATABASE_URL, a records table per test.
func postgresBackend() backend {
	return backend{name: "postgres", store: func(t *testing.T) idemstore.Store {
		s, _ := pgtest.Store(t, pgtest.Pool(t, 20))
		return s
	}, orders: func(t *testing.T) orderTable { return newPGOrderTable(t) }}
}

// orderTable is the shop's business table, on the database of a
// transactional store: createOrder inserts its order in the run's
// transaction, and count tells how many are committed.
type orderTable interface {
	insert(ctx context.Context, o order) error
	count(t *testing.T) int64
}

// pgOrderTable is the shop's business table on PostgreSQL.
type pgOrderTable struct {
	pool *pgxpool.Pool
	name string
}

// newPGOrderTable creates an orders table of the test's own.
func newPGOrderTable(t *testing.T) *pgOrderTable {
	pool := pgtest.Pool(t, 0)
	name := pgtest.Name(t) + "_orders"
	pgtest.Exec(t, pool, "CREATE TABLE "+name+" (id text PRIMARY KEY, item text NOT NULL, quantity int NOT NULL)")
	t.Cleanup(func() { pgtest.Drop(t, pool, name) })
	return &pgOrderTable{pool: pool, name: name}
}

// insert writes o in the run's transaction; a run without one is an error.
func (ot *pgOrderTable) insert(ctx context.Context, o order) error {
	tx := pgstore.Tx(ctx)
	if tx == nil {
		return fmt.Errorf("createOrder ran without pgstore.Tx")
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{ot.name}.Sanitize()+" (id, item, quantity) VALUES ($1, $2, $3)", o.ID, o.Item, o.Quantity)
	return err
}

// count is the number of committed orders.
func (ot *pgOrderTable) count(t *testing.T) int64 {
	return int64(pgtest.Count(t, ot.pool, ot.name, "true"))
}

// failingTxStore is a failingStore over a TxStore that stays one: the
// engine claims keys through its AcquireRun, which fails as Acquire does
// when armed.
type failingTxStore struct {
	*failingStore
	tx idemstore.TxStore
}

func (s failingTxStore) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	if s.fail.CompareAndSwap(true, false) {
		return idemstore.Acquisition{}, nil, fmt.Errorf("%w: test outage", idemstore.ErrStoreUnavailable)
	}
	return s.tx.AcquireRun(ctx, req)
}

// engineStore is the store to give the engine for f: f itself, or f as a
// TxStore when what it wraps is one.
func engineStore(f *failingStore) idemstore.Store {
	if tx, ok := f.Store.(idemstore.TxStore); ok {
		return failingTxStore{failingStore: f, tx: tx}
	}
	return f
}

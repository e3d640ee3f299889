package mysqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestConformance runs the stores' conformance suite against the MySQL
// store on MYSQL_DSN (skipped when it is unset), the transactional checks
// with a table of marks that a run's transaction writes: a mark is
// committed with its run's record or not at all.
func TestConformance(t *testing.T) {
	db := mysqltest.DB(t, 48) // the concurrent checks acquire from 32 goroutines
	store, table := mysqltest.Store(t, db)
	marks := "`" + table + "_marks`"
	mysqltest.Exec(t, db, "CREATE TABLE "+marks+" (mark VARBINARY(255) PRIMARY KEY) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, db, table+"_marks") })
	idemstoretest.Run(t, idemstoretest.Harness{
		New: func() (idemstore.Store, error) { return store, nil },
		// The server ends a frozen claim after idle_transaction_timeout,
		// in whole seconds: a lease of whole seconds.
		Lease: 2 * time.Second,
		TxWrite: func(ctx context.Context, mark string) error {
			_, err := mysqlstore.Tx(ctx).ExecContext(ctx, "INSERT INTO "+marks+" (mark) VALUES (?)", mark)
			return err
		},
		TxMarked: func(ctx context.Context, mark string) (bool, error) {
			var marked bool
			err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+marks+" WHERE mark = ?)", mark).Scan(&marked)
			return marked, err
		},
	})
}

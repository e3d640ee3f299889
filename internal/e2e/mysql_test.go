package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// The mariadb backend runs the scenarios on mysqlstore, whose runs are
// transactions as pgstore's are: createOrder also inserts its order through
// mysqlstore.Tx, and TestServer checks after each scenario that the orders
// table holds exactly one row per counted creation, in every server form.

// mariadbBackend is mysqlstore on MYSQL_DSN, a records table per test.
func mariadbBackend() backend {
	return backend{name: "mariadb", store: func(t *testing.T) idemstore.Store {
		s, _ := mysqltest.Store(t, mysqltest.DB(t, 20))
		return s
	}, orders: func(t *testing.T) orderTable { return newMySQLOrderTable(t) }}
}

// mysqlOrderTable is the shop's business table on MariaDB.
type mysqlOrderTable struct {
	db   *sql.DB
	name string
}

// newMySQLOrderTable creates an orders table of the test's own.
func newMySQLOrderTable(t *testing.T) *mysqlOrderTable {
	db := mysqltest.DB(t, 0)
	name := mysqltest.Name(t) + "_orders"
	mysqltest.Exec(t, db, "CREATE TABLE `"+name+"` (id VARBINARY(64) PRIMARY KEY, item VARCHAR(255) NOT NULL, quantity INT NOT NULL) ENGINE=InnoDB")
	t.Cleanup(func() { mysqltest.Drop(t, db, name) })
	return &mysqlOrderTable{db: db, name: name}
}

// insert writes o in the run's transaction; a run without one is an error.
func (ot *mysqlOrderTable) insert(ctx context.Context, o order) error {
	tx := mysqlstore.Tx(ctx)
	if tx == nil {
		return fmt.Errorf("createOrder ran without mysqlstore.Tx")
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO `"+ot.name+"` (id, item, quantity) VALUES (?, ?, ?)", o.ID, o.Item, o.Quantity)
	return err
}

// count is the number of committed orders.
func (ot *mysqlOrderTable) count(t *testing.T) int64 {
	return int64(mysqltest.Count(t, ot.db, ot.name, "true"))
}

// mariadbShopSpace is shopSpace on MariaDB: the shop's records table and a
// store on the same server for the provider.
func mariadbShopSpace(t *testing.T) (string, idemstore.Store) {
	db := mysqltest.DB(t, 20)
	_, table := mysqltest.Store(t, db)
	p, _ := mysqltest.Store(t, db)
	return table, p
}

// openMariaDBStore is openStore on MariaDB (MYSQL_DSN), over table.
func openMariaDBStore(table string) (idemstore.Store, error) {
	db, err := sql.Open("mysql", os.Getenv("MYSQL_DSN"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(64) // every stalled run holds its transaction's connection
	return mysqlstore.New(db, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1)), nil
}

// mariadbStepRows creates the table of the steps' rows for
// TestStepsResumeAfterKill on MariaDB and, when the test ends, checks that
// each step of each of orders committed one row.
func mariadbStepRows(t *testing.T, orders int) string {
	db := mysqltest.DB(t, 0)
	rows := mysqltest.Name(t) + "_rows"
	mysqltest.Exec(t, db, "CREATE TABLE `"+rows+"` (item VARCHAR(64) NOT NULL, step VARCHAR(32) NOT NULL) ENGINE=InnoDB")
	t.Cleanup(func() {
		for i := 1; i <= orders; i++ {
			for _, step := range []string{"reserve", "charge"} {
				if n := mysqltest.Count(t, db, rows, "item = ? AND step = ?", fmt.Sprint("order-", i), step); n != 1 {
					t.Errorf("order-%d: %d rows of step %s committed, want 1", i, n, step)
				}
			}
		}
		mysqltest.Drop(t, db, rows)
	})
	return rows
}

package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/idemgen/idemgen/internal/mysqltest"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
)

// The mariadb backend runs the scenarios on mysqlstore, whose runs are
// transactions as pgstore's are: createOrder also inserts its order through
// mysqlstore.Tx, and TestServer checks after each scenario that the orders
// table holds exactly one row per counted creation, in every server form.

// mariadbBackend is mysqlstore on MYSQL_DSN, a records table per test.
func mariadbBackend() backend {
	return backend{name: "mariadb", store: func(t *testing.T) idem.Store {
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

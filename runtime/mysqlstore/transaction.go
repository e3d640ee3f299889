package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"unsafe"

	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// errEngineEnds is what Commit and Rollback of a run's transaction answer
// the handler: the engine ends the transaction, with the record.
var errEngineEnds = errors.New("mysqlstore: the run's transaction is committed or rolled back by the engine, not the handler")

// errNoRun is what a statement on the nil Transaction that [Tx] returns
// outside a protected run answers, instead of a nil dereference.
var errNoRun = errors.New("mysqlstore: no run's transaction: Tx(ctx) returned nil, because ctx is not the context of a protected run on this store (a request without a key, a fail-open run, another store, or a context that does not derive from the handler's); check Tx's result and use the *sql.DB outside a run")

// Transaction is a run's transaction as [Tx] hands it to the handler: the
// statements of a *sql.Tx (and so what sqlc's DBTX and similar interfaces
// ask for), while Commit and Rollback are the engine's, which commits the
// handler's writes with the stored response.
//
// Each statement takes turns with the run's keep-alive, which keeps the
// server from ending a live run's transaction as idle while the handler
// spends its time elsewhere: rows a query returned hold the connection
// until they are closed (or read to their end), and a row of QueryRow until
// it is scanned. Rows of a statement prepared with Prepare or Stmt are not
// seen by the keep-alive: close them before a call that may outlast a third
// of the operation's lock.
//
// Outside a protected run [Tx] returns nil: its statements then return an
// error that says so (QueryRow and Stmt, which cannot return one, panic
// with it), never a nil dereference.
type Transaction struct {
	tx   *sql.Tx
	turn sqlfamily.Turn
	// open are the rows the handler's queries returned, until the
	// keep-alive sees them closed; guarded by turn.
	open []*sql.Rows
}

// ExecContext runs query in the transaction, as [sql.Tx.ExecContext].
func (t *Transaction) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if t == nil {
		return nil, errNoRun
	}
	t.turn.Wait()
	defer t.turn.Give()
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryContext runs query in the transaction, as [sql.Tx.QueryContext].
func (t *Transaction) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if t == nil {
		return nil, errNoRun
	}
	t.turn.Wait()
	defer t.turn.Give()
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err == nil {
		t.open = append(t.open, rows)
	}
	return rows, err
}

// QueryRowContext runs query in the transaction, as
// [sql.Tx.QueryRowContext].
func (t *Transaction) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if t == nil {
		panic(errNoRun)
	}
	t.turn.Wait()
	defer t.turn.Give()
	row := t.tx.QueryRowContext(ctx, query, args...)
	if rows := rowsOf(row); rows != nil {
		t.open = append(t.open, rows)
	}
	return row
}

// PrepareContext prepares query in the transaction, as
// [sql.Tx.PrepareContext].
func (t *Transaction) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if t == nil {
		return nil, errNoRun
	}
	t.turn.Wait()
	defer t.turn.Give()
	return t.tx.PrepareContext(ctx, query)
}

// StmtContext returns stmt for the transaction, as [sql.Tx.StmtContext].
func (t *Transaction) StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt {
	if t == nil {
		panic(errNoRun)
	}
	t.turn.Wait()
	defer t.turn.Give()
	return t.tx.StmtContext(ctx, stmt)
}

// Exec is ExecContext with the background context.
func (t *Transaction) Exec(query string, args ...any) (sql.Result, error) {
	return t.ExecContext(context.Background(), query, args...)
}

// Query is QueryContext with the background context.
func (t *Transaction) Query(query string, args ...any) (*sql.Rows, error) {
	return t.QueryContext(context.Background(), query, args...)
}

// QueryRow is QueryRowContext with the background context.
func (t *Transaction) QueryRow(query string, args ...any) *sql.Row {
	return t.QueryRowContext(context.Background(), query, args...)
}

// Prepare is PrepareContext with the background context.
func (t *Transaction) Prepare(query string) (*sql.Stmt, error) {
	return t.PrepareContext(context.Background(), query)
}

// Stmt is StmtContext with the background context.
func (t *Transaction) Stmt(stmt *sql.Stmt) *sql.Stmt {
	return t.StmtContext(context.Background(), stmt)
}

// Commit refuses: the engine commits the run's transaction with its record.
func (t *Transaction) Commit() error { return errEngineEnds }

// Rollback refuses: the engine rolls the run's transaction back when the
// handler returns an error or a status that is not stored.
func (t *Transaction) Rollback() error { return errEngineEnds }

// keepAlive runs ping (the keep-alive's statement) unless a statement of
// the handler's, or rows it has not closed, hold the connection: no command
// may be sent on it then, and none need be.
func (t *Transaction) keepAlive(ping func() error) error {
	_, err := t.turn.Try(func() error {
		kept := t.open[:0]
		for _, rows := range t.open {
			if _, err := rows.Columns(); err == nil { // still open
				kept = append(kept, rows)
			}
		}
		clear(t.open[len(kept):])
		t.open = kept
		if len(kept) > 0 {
			return nil
		}
		return ping()
	})
	return err
}

// rowsOf returns the rows behind row, which database/sql keeps unexported:
// they hold the connection until the row is scanned. It returns nil should
// database/sql's type change shape (a test of this package checks it).
func rowsOf(row *sql.Row) *sql.Rows {
	v := reflect.ValueOf(row).Elem()
	f := v.FieldByName("rows")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*sql.Rows]() {
		return nil
	}
	return *(**sql.Rows)(unsafe.Pointer(f.UnsafeAddr()))
}

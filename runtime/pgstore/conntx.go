package pgstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily"
)

// errEngineEnds is what Commit and Rollback of a run's transaction answer
// the handler: the engine ends the transaction, with the record.
var errEngineEnds = errors.New("pgstore: the run's transaction is committed or rolled back by the engine, not the handler")

// errEndRefused is what a statement of the handler's that would end the
// run's transaction (endsTransaction) answers, unsent, and every statement
// after it: the run is rolled back once the handler returns.
var errEndRefused = fmt.Errorf("pgstore: COMMIT, ROLLBACK, END, ABORT and PREPARE TRANSACTION are not sent on the run's transaction, which the engine ends: the run is rolled back and answered 500 when the handler returns: %w", idemstore.ErrTxEnded)

// errEndedByHandler is what the run's Commit, and every statement of the
// handler's after the end, answer once a statement of the handler's that
// endsTransaction could not recognize (an end behind another statement of
// a multi-statement string) ended the run's transaction: a later
// statement would commit on its own, outside the claim.
var errEndedByHandler = fmt.Errorf("pgstore: a statement of the handler's ended the run's transaction, and with it the key's claim; end it only through the engine: %w", idemstore.ErrTxEnded)

// connTx is the pgx.Tx that [Tx] hands a handler: the run's transaction on
// its connection. The store begins it with the claim in one round trip
// (pgx's BeginTx would take one of its own, before the claim), so it is
// not pgx's type; it behaves as pgx's does, statements and savepoints
// (Begin) alike, except that Commit and Rollback are the engine's.
//
// Each statement takes the connection's turn (sqlfamily.Turn) until it is
// done, its rows or batch results included, so that the run's keep-alive
// (runTx.KeepAlive) never sends while the handler's statement is on the
// connection; and each is refused once the transaction has ended (take).
type connTx struct {
	conn       *pgx.Conn
	turn       sqlfamily.Turn
	savepoints int64 // savepoints begun, to name the next
	refused    bool  // a statement that ends the transaction was refused: the run rolls back
}

var _ pgx.Tx = (*connTx)(nil)

// Begin starts a pseudo nested transaction: a savepoint, as pgx's Tx does.
func (t *connTx) Begin(ctx context.Context) (pgx.Tx, error) {
	t.savepoints++
	sp := &savepointTx{tx: t, name: "idem_sp_" + strconv.FormatInt(t.savepoints, 10)}
	if _, err := t.Exec(ctx, "SAVEPOINT "+sp.name); err != nil {
		return nil, err
	}
	return sp, nil
}

// take takes the connection's turn for statements of the handler's, none
// of them (CopyFrom) or some that would end the transaction (ends), unless
// the transaction is over or must be: they would end it (they are refused,
// unsent, and the run with them), an earlier one was refused, or the
// connection is idle (pgconn's transaction status, which the server's last
// answer set: no round trip), which it is only when a statement of the
// handler's ended the transaction.
func (t *connTx) take(ends bool) error {
	if err := t.turn.Take(); err != nil {
		return err
	}
	if ends {
		t.refused = true
	}
	switch {
	case t.refused:
		t.turn.Give()
		return errEndRefused
	case t.conn.PgConn().TxStatus() == 'I':
		t.turn.Give()
		return errEndedByHandler
	}
	return nil
}

// Commit refuses: the engine commits the run's transaction with its record.
func (t *connTx) Commit(context.Context) error { return errEngineEnds }

// Rollback refuses: the engine rolls the run's transaction back when the
// handler returns an error or a status that is not stored.
func (t *connTx) Rollback(context.Context) error { return errEngineEnds }

// CopyFrom delegates to the connection.
func (t *connTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.take(false); err != nil {
		return 0, err
	}
	defer t.turn.Give()
	return t.conn.CopyFrom(ctx, table, columns, src)
}

// SendBatch delegates to the connection; the results hold the connection
// until closed.
func (t *connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.take(batchEnds(b)); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return &heldBatch{BatchResults: t.conn.SendBatch(ctx, b), turn: &t.turn}
}

// batchEnds reports whether a statement of b would end the transaction.
func batchEnds(b *pgx.Batch) bool {
	for _, q := range b.QueuedQueries {
		if endsTransaction(q.SQL) {
			return true
		}
	}
	return false
}

// LargeObjects returns the large objects of the transaction.
func (t *connTx) LargeObjects() pgx.LargeObjects { return largeObjects(t) }

// Prepare delegates to the connection.
func (t *connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.take(endsTransaction(sql)); err != nil {
		return nil, err
	}
	defer t.turn.Give()
	return t.conn.Prepare(ctx, name, sql)
}

// Exec delegates to the connection.
func (t *connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.take(endsTransaction(sql)); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer t.turn.Give()
	return t.conn.Exec(ctx, sql, args...)
}

// Query delegates to the connection; the rows hold the connection until
// closed (or read to their end).
func (t *connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.take(endsTransaction(sql)); err != nil {
		return nil, err
	}
	rows, err := t.conn.Query(ctx, sql, args...)
	if err != nil {
		t.turn.Give()
		return rows, err
	}
	return &heldRows{Rows: rows, turn: &t.turn}, nil
}

// QueryRow delegates to the connection, as pgx's QueryRow does: the row
// holds the connection until scanned.
func (t *connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return (*heldRow)(rows.(*heldRows))
}

// Conn returns the connection. A statement sent on it directly, rather
// than through the transaction, does not take the connection's turn: the
// run's keep-alive may then send at the same moment, which pgx does not
// allow. Use the transaction's own methods.
func (t *connTx) Conn() *pgx.Conn { return t.conn }

// savepointTx is a savepoint of a run's transaction, as pgx's nested Tx.
type savepointTx struct {
	tx     *connTx
	name   string
	closed bool
}

var _ pgx.Tx = (*savepointTx)(nil)

// Begin starts a further savepoint.
func (sp *savepointTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Begin(ctx)
}

// Commit releases the savepoint.
func (sp *savepointTx) Commit(ctx context.Context) error { return sp.end(ctx, "RELEASE SAVEPOINT ") }

// Rollback rolls back to the savepoint; pgx.ErrTxClosed once ended.
func (sp *savepointTx) Rollback(ctx context.Context) error {
	return sp.end(ctx, "ROLLBACK TO SAVEPOINT ")
}

func (sp *savepointTx) end(ctx context.Context, verb string) error {
	if sp.closed {
		return pgx.ErrTxClosed
	}
	sp.closed = true
	_, err := sp.tx.Exec(ctx, verb+sp.name)
	return err
}

// CopyFrom delegates to the transaction.
func (sp *savepointTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if sp.closed {
		return 0, pgx.ErrTxClosed
	}
	return sp.tx.CopyFrom(ctx, table, columns, src)
}

// SendBatch delegates to the transaction.
func (sp *savepointTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if sp.closed {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	return sp.tx.SendBatch(ctx, b)
}

// LargeObjects returns the large objects of the transaction.
func (sp *savepointTx) LargeObjects() pgx.LargeObjects { return largeObjects(sp) }

// Prepare delegates to the transaction.
func (sp *savepointTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Prepare(ctx, name, sql)
}

// Exec delegates to the transaction.
func (sp *savepointTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if sp.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return sp.tx.Exec(ctx, sql, args...)
}

// Query delegates to the transaction.
func (sp *savepointTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Query(ctx, sql, args...)
}

// QueryRow delegates to the transaction.
func (sp *savepointTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if sp.closed {
		return errRow{pgx.ErrTxClosed}
	}
	return sp.tx.QueryRow(ctx, sql, args...)
}

// Conn returns the connection.
func (sp *savepointTx) Conn() *pgx.Conn { return sp.tx.conn }

// heldRows are a statement's rows, which hold the run's connection until
// closed or read to their end.
type heldRows struct {
	pgx.Rows
	turn  *sqlfamily.Turn
	given bool
}

// Next advances as pgx's rows do, and gives the connection back after the
// last row (pgx's rows close themselves there).
func (r *heldRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.give()
	return false
}

// Close closes the rows and gives the connection back.
func (r *heldRows) Close() {
	r.Rows.Close()
	r.give()
}

func (r *heldRows) give() {
	if !r.given {
		r.given = true
		r.turn.Give()
	}
}

// heldRow is QueryRow's row: its rows, scanned as pgx's row is.
type heldRow heldRows

// Scan reads the first row into dest and closes the rows; pgx.ErrNoRows
// when there is none.
func (r *heldRow) Scan(dest ...any) error {
	rows := (*heldRows)(r)
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// heldBatch are a batch's results, which hold the run's connection until
// closed.
type heldBatch struct {
	pgx.BatchResults
	turn  *sqlfamily.Turn
	given bool
}

// Close closes the results and gives the connection back.
func (b *heldBatch) Close() error {
	err := b.BatchResults.Close()
	if !b.given {
		b.given = true
		b.turn.Give()
	}
	return err
}

// errRow is a Row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// largeObjects returns pgx's LargeObjects over tx. pgx builds that value
// only for its own Tx types (its one field, the Tx, is unexported), so it
// is set through reflection; should pgx's type change shape, the zero
// value is returned, whose methods panic (a test of this package checks
// the shape).
func largeObjects(tx pgx.Tx) pgx.LargeObjects {
	var lo pgx.LargeObjects
	v := reflect.ValueOf(&lo).Elem()
	if v.NumField() != 1 || v.Field(0).Type() != reflect.TypeFor[pgx.Tx]() {
		return lo
	}
	f := v.Field(0)
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(tx))
	return lo
}

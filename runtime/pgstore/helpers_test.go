package pgstore_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
)

// The fault suite's helpers, on PostgreSQL, for the scenarios only this
// store has.
var (
	payOp   = func() *idem.Operation { op := sqlfamilytest.PayOp(); return &op }()
	serve   = sqlfamilytest.Serve
	post    = sqlfamilytest.Post
	acquire = sqlfamilytest.Acquire
)

// payments creates a business table of the test's own (no unique key: a
// second run of a key would add a second row) and returns its name.
func payments(t testing.TB, pool *pgxpool.Pool) string { return db{pool}.Payments(t) }

// insertPayment is the handler's business write, in the run's transaction:
// one row for the request's key, returning the row's id.
func insertPayment(ctx context.Context, table string) (int64, error) {
	return sqlfamilytest.InsertPayment(ctx, dialect{}, table)
}

// paymentHandler inserts a payment and answers 201 with its id; before
// answering it calls between (nil: nothing).
func paymentHandler(table string, between func(ctx context.Context)) http.HandlerFunc {
	return sqlfamilytest.PaymentHandler(dialect{}, table, between)
}

// lapse moves key's lease deadline (and, with expire, its expiry) into the
// past, or every record's when key is "".
func lapse(t *testing.T, table string, pool *pgxpool.Pool, key string, expire bool) {
	t.Helper()
	sqlfamilytest.Lapse(t, dialect{}, db{pool}, table, key, expire)
}

package pgtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Counter counts the round trips of a pool's connections: every query,
// Exec, BEGIN and COMMIT is one, a batch one for all its statements. The
// one-off statement preparations of a new connection are not counted.
type Counter struct{ n atomic.Int64 }

// RoundTrips returns the round trips counted so far.
func (c *Counter) RoundTrips() int64 { return c.n.Load() }

// TraceQueryStart implements pgx.QueryTracer.
func (c *Counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *Counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (c *Counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer: a statement of a batch, in
// the batch's round trip.
func (c *Counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *Counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// CountingPool is [Pool] with a [Counter] on its connections.
func CountingPool(t testing.TB, maxConns int) (*pgxpool.Pool, *Counter) {
	t.Helper()
	c := &Counter{}
	return poolOf(t, URL(t), maxConns, c), c
}

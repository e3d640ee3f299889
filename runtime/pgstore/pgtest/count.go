package pgtest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Counter counts the round trips of a pool's connections: every query,
// Exec, BEGIN and COMMIT is one, a batch one for all its statements. The
// one-off statement preparations of a new connection are not counted. It
// keeps the statements too, in order, each batch's joined by "; ".
type Counter struct {
	n    atomic.Int64
	mu   sync.Mutex
	sqls []string
}

// RoundTrips returns the round trips counted so far.
func (c *Counter) RoundTrips() int64 { return c.n.Load() }

// Reset forgets the round trips and statements counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.Store(0)
	c.sqls = nil
}

// Statements returns the statements of the round trips counted since the
// last Reset, one string a round trip.
func (c *Counter) Statements() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sqls...)
}

func (c *Counter) add(sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sqls = append(c.sqls, sql)
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *Counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.add(data.SQL)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *Counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (c *Counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	var sqls []string
	if data.Batch != nil {
		for _, q := range data.Batch.QueuedQueries {
			sqls = append(sqls, q.SQL)
		}
	}
	c.add(strings.Join(sqls, "; "))
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
	return CountingPoolOf(t, URL(t), maxConns)
}

// CountingPoolOf is [PoolOf] with a [Counter] on its connections.
func CountingPoolOf(t testing.TB, url string, maxConns int) (*pgxpool.Pool, *Counter) {
	t.Helper()
	c := &Counter{}
	return poolOf(t, url, maxConns, c), c
}

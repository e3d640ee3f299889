package storebench_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/internal/storebench"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// BenchmarkPostgresReadShapes measures the shape of a replay's read
// alone, without the engine or the store's Go code: the same rows of a
// pgstore table, read from 16 parallel callers by
//
//   - floor: the one-transaction floor's SELECT of two columns;
//   - rounded: pgstore's earlier read, which rounded the lease's time
//     left in the select list (greatest, ceil and extract in numeric,
//     under a CASE that skipped them for a completed record) and
//     compared lease_until;
//   - lean: pgstore's read since (sql.go): the same row, the fingerprint
//     compared by the server, the lease's time left as an interval.
//
// in rounds that alternate the three (STOREBENCH_ROUNDS, default 3;
// take the medians of per-round ratios). The server prepares each
// expression of a select list at every execution, evaluated or not.
func BenchmarkPostgresReadShapes(b *testing.B) {
	h := storebench.NewPostgres(b)
	s, table := pgtest.Store(b, h.Pool)
	e := idem.NewEngine(s)
	handler := h.Handler()
	var keys []string
	var fp string
	for range 64 {
		storebench.Send(b, engineServe(e, handler), rand.Text())
	}
	rows, err := h.Pool.Query(context.Background(), "SELECT key, fingerprint FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k, &fp); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, k)
	}
	if rows.Err() != nil || len(keys) != 64 {
		b.Fatalf("stored keys: %d, %v", len(keys), rows.Err())
	}
	t := pgx.Identifier{table}.Sanitize()
	shapes := map[string]string{
		"floor": `SELECT status, body FROM ` + t + ` WHERE key = $1`,
		"rounded": `SELECT fingerprint = $2::text, completed,
	CASE WHEN completed THEN 0 ELSE greatest(ceil(extract(epoch FROM lease_until - statement_timestamp()) * 1000), 1)::bigint END,
	status, header, body, body_omitted, NOT completed AND lease_until <= statement_timestamp()
FROM ` + t + ` WHERE key = $1 AND expires_at > statement_timestamp()`,
		"lean": `SELECT fingerprint = $2::text, completed, status, header, body, body_omitted,
	lease_until - statement_timestamp()
FROM ` + t + ` WHERE key = $1 AND expires_at > statement_timestamp()`,
	}
	storebench.Alternate(b, []string{"floor", "rounded", "lean"}, func(b *testing.B, name string, n uint64) bool {
		args := []any{keys[n%64], fp}
		if name == "floor" {
			args = args[:1] // the floor's read takes the key alone
		}
		rows, err := h.Pool.Query(context.Background(), shapes[name], args...)
		if err != nil {
			b.Error(err)
			return false
		}
		got := 0
		for rows.Next() {
			_ = rows.RawValues()
			got++
		}
		if rows.Err() != nil || got != 1 {
			b.Errorf("%s: %d rows, %v", name, got, rows.Err())
			return false
		}
		return true
	})
}

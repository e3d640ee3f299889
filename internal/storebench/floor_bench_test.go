package storebench_test

import (
	"testing"

	"github.com/idemgen/idemgen/internal/storebench"
)

// BenchmarkPostgresFloor runs the harness's handler under pgstore through
// the engine and under the one-transaction floor, first requests and
// replays, from 16 parallel callers on two cores, in three rounds that
// alternate the variants (take the medians), reporting PostgreSQL round
// trips per request. Run it against a server with the durable defaults
// (fsync, synchronous_commit on): the commit's flush is the cost that
// matters.
func BenchmarkPostgresFloor(b *testing.B) {
	h := storebench.New(b)
	h.Run(b, h.FloorVariant(b), h.PgstoreVariant(b))
}

package idemstoretest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// countingStore is a store of one's own: it wraps another (here the Redis
// store) and counts the acquires, for a metric.
type countingStore struct {
	idemstore.Store
	acquires atomic.Int64
}

// Acquire counts the acquire and passes it on.
func (s *countingStore) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, req)
}

// TestCountingStore runs the conformance suite against the wrapper.
func TestCountingStore(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	idemstoretest.Run(t, idemstoretest.Harness{
		New: func() (idemstore.Store, error) {
			return &countingStore{Store: redisstore.New(rdb)}, nil
		},
		Advance: mr.FastForward, // miniredis's clock: the exact boundaries are checked too
	})
}

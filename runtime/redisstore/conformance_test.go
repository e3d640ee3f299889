package redisstore_test

import (
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestConformance runs the stores' conformance suite against the Redis
// store on miniredis (its clock moved by FastForward, so the exact
// boundaries are checked too), on the real Redis of REDIS_URL and on the
// Redis Cluster of REDIS_CLUSTER_ADDRS (short leases that the suite waits
// out); each of the last two skips when its variable is unset.
func TestConformance(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		m, rdb := redistest.Mini(t)
		store := redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t)))
		idemstoretest.Run(t, idemstoretest.Harness{
			New:     func() (idemstore.Store, error) { return store, nil },
			Advance: m.FastForward,
		})
	})
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := redistest.Keyspace(t)
		store := redisstore.New(rdb, redisstore.WithPrefix(prefix))
		idemstoretest.Run(t, idemstoretest.Harness{New: func() (idemstore.Store, error) { return store, nil }})
	})
	t.Run("cluster", func(t *testing.T) {
		rdb, prefix := redistest.Cluster(t)
		store := redisstore.New(rdb, redisstore.WithPrefix(prefix))
		idemstoretest.Run(t, idemstoretest.Harness{New: func() (idemstore.Store, error) { return store, nil }})
	})
}

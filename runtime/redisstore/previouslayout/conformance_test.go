package previouslayout_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// withOrigin gives every acquire the Origin the engine would, so that the
// decorated store looks for, and during the rollout writes, the record's
// previous-layout key too: the conformance suite's keys play the client's
// keys of operation conf.Op.
type withOrigin struct{ *previouslayout.Store }

func (s withOrigin) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	req.Origin = &idemstore.Origin{API: "conf", Operation: "Op", Key: req.Key, Request: "before-" + req.Fingerprint}
	return s.Store.Acquire(ctx, req)
}

// TestConformance runs the stores' conformance suite against the store
// with the migration on, during the rollout (every record under both keys
// of its layouts) and after the window (the marker 0: the wrapped store
// alone), on miniredis (its clock moved by FastForward), on the real Redis
// of REDIS_URL and on the Redis Cluster of REDIS_CLUSTER_ADDRS.
func TestConformance(t *testing.T) {
	for _, phase := range []struct {
		name   string
		marker string // "": the store writes it (now: the rollout)
	}{{"rollout", ""}, {"after the window", "0"}} {
		t.Run(phase.name, func(t *testing.T) {
			harness := func(t *testing.T, rdb redis.UniversalClient, prefix string) idemstoretest.Harness {
				if phase.marker != "" {
					if err := rdb.Set(context.Background(), prefix+":"+previouslayout.KeyLayoutMarker, phase.marker, 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				store := withOrigin{previouslayout.New(rdb, 0, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))}
				return idemstoretest.Harness{New: func() (idemstore.Store, error) { return store, nil }}
			}
			t.Run("miniredis", func(t *testing.T) {
				m, rdb := redistest.Mini(t)
				h := harness(t, rdb, redistest.Prefix(t))
				h.Advance = m.FastForward
				idemstoretest.Run(t, h)
			})
			t.Run("redis", func(t *testing.T) {
				rdb, prefix := redistest.Keyspace(t)
				idemstoretest.Run(t, harness(t, rdb, prefix))
			})
			t.Run("cluster", func(t *testing.T) {
				rdb, prefix := redistest.Cluster(t)
				idemstoretest.Run(t, harness(t, rdb, prefix))
			})
		})
	}
}

package e2e_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// clusterSpread checks where the shop's keys under prefix landed on the
// Redis Cluster of REDIS_CLUSTER_ADDRS: each step journal
// (prefix:{tag}:steps:key) in the hash slot of its record (prefix:key),
// which its scripts need, and the records on more than one master, so that
// the run crossed shards. It returns the records and journals found.
func clusterSpread(t *testing.T, prefix string) (records, journals int) {
	t.Helper()
	rdb, _ := redistest.Cluster(t)
	ctx := context.Background()
	var mu sync.Mutex
	masters := map[string]bool{}
	var keys []string
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			if _, _, _, ok := idemstore.SplitRecordKey(strings.TrimPrefix(iter.Val(), prefix+":")); ok {
				masters[c.Options().Addr] = true
			}
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		_, key, ok := strings.Cut(k, "}:steps:")
		if !ok {
			if _, _, _, ok := idemstore.SplitRecordKey(strings.TrimPrefix(k, prefix+":")); ok {
				records++
			}
			continue
		}
		journals++
		js, err := rdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		rs, err := rdb.ClusterKeySlot(ctx, prefix+":"+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if js != rs {
			t.Errorf("journal %s in slot %d, its record %s:%s in slot %d", k, js, prefix, key, rs)
		}
	}
	if len(masters) < 2 {
		t.Errorf("records on %d master(s) of the cluster, want the keys spread over several", len(masters))
	}
	return records, journals
}

//go:build unix

package redisstore_test

import (
	"context"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// BenchmarkAcquireCommands compares, against REDIS_URL, the command shapes
// an acquire can take, on a new key (create) and on a completed record
// (replay): SET NX and GET pipelined (what RedisStore sends), one SET NX
// GET (which go-redis answers with the error redis.Nil on a create, through
// its retry classifier outside a pipeline), the same in a pipeline, and
// acquire.lua alone; floor is one EVALSHA of `return 1`, a bare round trip.
// Besides ns/op it reports this process's CPU per call (client-cpu-ns/op,
// getrusage) and the Redis server's (redis-cpu-ns/op, INFO cpu), which do
// not depend on which of the two is the bottleneck. Run it with the
// benchmark and Redis on separate cores:
//
//	taskset -c 0 go test -run '^$' -bench BenchmarkAcquireCommands -cpu 1 ./runtime/
//
// with Redis pinned to core 1 (taskset -pc 1 <redis-server pid>).
func BenchmarkAcquireCommands(b *testing.B) {
	ctx := context.Background()
	const ttl = int64(86_460_000)
	fp, _ := hex.DecodeString(benchFingerprint[:32]) // the stored fingerprint (lua/lua.go)
	record := "i" + string(fp) + "VGHJ4UXQ2NMDE7RWB3KLOPFA5S\n1\n86400000"
	acquire := redis.NewScript(lua.Acquire)
	floor := redis.NewScript("return 1")
	shapes := []struct {
		name string
		run  func(rdb *redis.Client, key string) (created bool, err error)
	}{
		{"set-nx+get", func(rdb *redis.Client, key string) (bool, error) {
			set := redis.NewBoolCmd(ctx, "set", key, record, "nx", "px", ttl)
			get := redis.NewStringCmd(ctx, "get", key)
			pipe := rdb.Pipeline()
			_ = pipe.Process(ctx, set)
			_ = pipe.Process(ctx, get)
			_, _ = pipe.Exec(ctx)
			if set.Err() != nil || set.Val() {
				return set.Val(), set.Err()
			}
			return false, get.Err()
		}},
		{"set-nx-get", func(rdb *redis.Client, key string) (bool, error) {
			err := rdb.Process(ctx, redis.NewStringCmd(ctx, "set", key, record, "nx", "px", ttl, "get"))
			if err == redis.Nil {
				return true, nil
			}
			return false, err
		}},
		{"set-nx-get-pipelined", func(rdb *redis.Client, key string) (bool, error) {
			// One SET NX GET in a pipeline: go-redis answers nil in a
			// pipeline without its retry classifier.
			set := redis.NewStringCmd(ctx, "set", key, record, "nx", "px", ttl, "get")
			pipe := rdb.Pipeline()
			_ = pipe.Process(ctx, set)
			_, _ = pipe.Exec(ctx)
			if err := set.Err(); err != redis.Nil {
				return false, err
			}
			return true, nil
		}},
		{"acquire.lua", func(rdb *redis.Client, key string) (bool, error) {
			v, err := acquire.Run(ctx, rdb, []string{key}, "VGHJ4UXQ2NMDE7RWB3KLOPFA5S", string(fp), ttl, int64(86_400_000), benchFingerprint).Slice()
			return err == nil && v[0] == "proceed", err
		}},
		{"floor", func(rdb *redis.Client, key string) (bool, error) {
			return false, floor.Run(ctx, rdb, []string{key}).Err()
		}},
	}
	for _, replay := range []bool{false, true} {
		mode := "create"
		if replay {
			mode = "replay"
		}
		for _, shape := range shapes {
			b.Run(mode+"/"+shape.name, func(b *testing.B) {
				rdb, prefix := redistest.Keyspace(b)
				completed := prefix + ":replayed"
				if err := rdb.Set(ctx, completed, "c"+string(fp)+"2!D"+string(benchRespBody), 0).Err(); err != nil {
					b.Fatal(err)
				}
				var n atomic.Int64
				redis0, client0 := redistest.CPUSeconds(b, rdb), benchClientCPU()
				b.ReportAllocs()
				b.SetParallelism(2 * benchParallelism)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := completed
						if !replay {
							key = prefix + ":" + strconv.FormatInt(n.Add(1), 10)
						}
						created, err := shape.run(rdb, key)
						if err != nil || (created == replay && shape.name != "floor") {
							b.Errorf("%s of %s: created %v, %v", shape.name, key, created, err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(benchClientCPU()-client0)/float64(b.N), "client-cpu-ns/op")
				b.ReportMetric((redistest.CPUSeconds(b, rdb)-redis0)*1e9/float64(b.N), "redis-cpu-ns/op")
			})
		}
	}
}

// benchClientCPU is this process's user+system CPU time, in ns.
func benchClientCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

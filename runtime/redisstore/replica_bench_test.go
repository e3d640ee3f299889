package redisstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/redistest/redisproc"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// BenchmarkReplicaAck measures what the replica's acknowledgement costs a
// first request (acquire, then complete with WAIT pipelined), on private
// servers it starts: a master without replicas (no WAIT), a master with one
// replica and the default wiring (WAIT 1), and the same master with the
// acknowledgement off (WithReplicaAcks(0, 0): replication alone). Besides
// ns/op it reports the 50th, 99th and 99.9th percentile and the maximum of
// the completion's latency in µs, from which the default timeout is chosen,
// and how many completions of the round were not acknowledged in time.
func BenchmarkReplicaAck(b *testing.B) {
	ctx := context.Background()
	start := func(args ...string) *redisproc.Server {
		s, err := redisproc.Start(ctx, redisproc.Options{Args: args})
		if errors.Is(err, redisproc.ErrNotFound) {
			b.Skip(err)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Stop)
		return s
	}
	alone := start()
	master := start()
	start("--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	admin := redis.NewClient(&redis.Options{Addr: master.Addr()})
	defer admin.Close()
	for info := ""; !strings.Contains(info, ",state=online,"); info, _ = admin.Info(ctx, "replication").Result() {
		time.Sleep(20 * time.Millisecond) // polling a server we do not control
	}
	var n atomic.Int64 // keys are new across sub-benchmarks and their rounds
	for _, bc := range []struct {
		name string
		addr string
		opts []redisstore.Option
	}{
		{"no-replica", alone.Addr(), nil},
		{"one-replica-wait", master.Addr(), nil},
		{"one-replica-acks-off", master.Addr(), []redisstore.Option{redisstore.WithReplicaAcks(0, 0)}},
	} {
		b.Run("first/"+bc.name, func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: bc.addr, ContextTimeoutEnabled: true, PoolSize: 64})
			defer rdb.Close()
			store := redisstore.New(rdb, append([]redisstore.Option{redisstore.WithPrefix(bc.name)}, bc.opts...)...)
			var unacked atomic.Int64 // completions answered ErrUnreplicated
			var mu sync.Mutex        // guards lat
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.RunParallel(func(pb *testing.PB) {
				mine := make([]time.Duration, 0, 1024)
				for pb.Next() {
					key := "CreateOrder::" + strconv.FormatInt(n.Add(1), 10)
					token := rand.Text()
					acq, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: benchFingerprint, Lease: 30 * time.Second})
					if err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
						b.Fatalf("acquire: %+v, %v", acq, err)
					}
					began := time.Now()
					switch err := store.Complete(ctx, key, token, benchRecord, time.Minute); {
					case errors.Is(err, idem.ErrUnreplicated):
						unacked.Add(1)
					case err != nil:
						b.Fatalf("complete: %v", err)
					}
					mine = append(mine, time.Since(began))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			if len(lat) == 0 {
				return
			}
			slices.Sort(lat)
			at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(at(0.5), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
			b.ReportMetric(at(0.999), "p999-µs")
			b.ReportMetric(at(1), "max-µs")
			b.ReportMetric(float64(unacked.Load()), "unacked")
		})
	}
}

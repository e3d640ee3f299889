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

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// BenchmarkReplicaAck measures what the replica's acknowledgement costs a
// first request (acquire, then complete with WAIT pipelined), on private
// servers it starts: a master without replicas (no WAIT), a master with one
// replica and the default wiring (WAIT 1), and the same master with the
// acknowledgement off (WithReplicaAcks(0, 0): replication alone). Besides
// ns/op it reports the 50th, 99th and 99.9th percentile and the maximum of
// the completion's latency in µs, from which the default timeout is chosen,
// and how many completions of the round were not acknowledged in time. The
// step/ variants journal a step (idem.Step's write) between acquire and
// complete, and report its latency too (steps are acknowledged as
// completions are).
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
	replica := start("--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	admin := redis.NewClient(&redis.Options{Addr: master.Addr()})
	defer admin.Close()
	replicaAdmin := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer replicaAdmin.Close()
	for info := ""; !strings.Contains(info, ",state=online,"); info, _ = admin.Info(ctx, "replication").Result() {
		time.Sleep(20 * time.Millisecond) // polling a server we do not control
	}
	var n atomic.Int64 // keys are new across sub-benchmarks and their rounds
	for _, bc := range []struct {
		name string
		addr string
		opts []redisstore.Option
		step bool // journal a step between acquire and complete
	}{
		{"no-replica", alone.Addr(), nil, false},
		{"one-replica-wait", master.Addr(), nil, false},
		{"one-replica-acks-off", master.Addr(), []redisstore.Option{redisstore.WithReplicaAcks(0, 0)}, false},
		{"step/no-replica", alone.Addr(), nil, true},
		{"step/one-replica-wait", master.Addr(), nil, true},
		{"step/one-replica-acks-off", master.Addr(), []redisstore.Option{redisstore.WithReplicaAcks(0, 0)}, true},
	} {
		b.Run("first/"+bc.name, func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: bc.addr, ContextTimeoutEnabled: true, PoolSize: 64})
			defer rdb.Close()
			store := redisstore.New(rdb, append([]redisstore.Option{redisstore.WithPrefix(strings.ReplaceAll(bc.name, "/", "-"))}, bc.opts...)...)
			var unacked atomic.Int64 // completions answered ErrUnreplicated
			var mu sync.Mutex        // guards lat
			lat := make([]time.Duration, 0, b.N)
			var stepLat []time.Duration // the step's journal write, when it has one
			srv := redis.NewClient(&redis.Options{Addr: bc.addr})
			defer srv.Close()
			cpu0, waits0 := redisCPU(b, srv), commandCalls(b, srv, "wait")
			replicaCPU0 := redisCPU(b, replicaAdmin)
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.RunParallel(func(pb *testing.PB) {
				mine := make([]time.Duration, 0, 1024)
				var steps []time.Duration
				for pb.Next() {
					key := "CreateOrder::" + strconv.FormatInt(n.Add(1), 10)
					token := rand.Text()
					acq, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: benchFingerprint, Lease: 30 * time.Second})
					if err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
						b.Fatalf("acquire: %+v, %v", acq, err)
					}
					if bc.step {
						began := time.Now()
						tx, err := store.BeginStep(ctx, key, token, acq.Fence)
						if err == nil {
							err = tx.Commit(ctx, "charge", []byte(`"ch_1"`), time.Minute)
						}
						switch {
						case errors.Is(err, idemstore.ErrUnreplicated):
							unacked.Add(1)
						case err != nil:
							b.Fatalf("step: %v", err)
						}
						steps = append(steps, time.Since(began))
					}
					began := time.Now()
					switch err := store.Complete(ctx, key, token, benchRecord, time.Minute); {
					case errors.Is(err, idemstore.ErrUnreplicated):
						unacked.Add(1)
					case err != nil:
						b.Fatalf("complete: %v", err)
					}
					mine = append(mine, time.Since(began))
				}
				mu.Lock()
				lat = append(lat, mine...)
				stepLat = append(stepLat, steps...)
				mu.Unlock()
			})
			cpu1, waits1 := redisCPU(b, srv), commandCalls(b, srv, "wait")
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "master-cpu-µs/op")
			if bc.addr == master.Addr() {
				b.ReportMetric((redisCPU(b, replicaAdmin)-replicaCPU0)*1e6/float64(b.N), "replica-cpu-µs/op")
			}
			b.ReportMetric(float64(waits1-waits0)/float64(b.N), "wait/op")
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
			if len(stepLat) > 0 {
				slices.Sort(stepLat)
				b.ReportMetric(float64(stepLat[len(stepLat)/2].Microseconds()), "step-p50-µs")
				b.ReportMetric(float64(stepLat[len(stepLat)*99/100].Microseconds()), "step-p99-µs")
			}
		})
	}
}

// BenchmarkCompleteReplicaCount measures, on a private redis-server, what
// counting the master's replicas costs Redis per completion:
// complete.lua counting them itself (ARGV[4] "r": INFO replication inside
// the script, as a Cluster's or a Ring's completions still do), against the
// script counting none and one INFO replication after each batch of 8
// completions on their connection (what the store's lanes send on one
// server's client). Each iteration creates an in-progress record (SET) and
// completes it; a batch of 8 goes in one pipeline. It reports Redis's CPU
// per completion (INFO used_cpu_user + used_cpu_sys) and the time inside
// the commands (INFO commandstats usec of evalsha, which includes the
// commands a script calls, and of the INFO sent after a batch).
func BenchmarkCompleteReplicaCount(b *testing.B) {
	ctx := context.Background()
	srv, err := redisproc.Start(ctx, redisproc.Options{})
	if errors.Is(err, redisproc.ErrNotFound) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	complete := redis.NewScript(lua.Complete)
	if err := complete.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}
	const batch = 8
	inProgress := "i0123456789abcdef" + "tok-0123456789abcdefghij\n1\n86400000"
	result := strings.Repeat("r", 300)
	var n atomic.Int64
	for _, bc := range []struct {
		name     string
		inScript bool
	}{{"in-script", true}, {"per-batch", false}} {
		b.Run(bc.name, func(b *testing.B) {
			// An empty keyspace for each run: a dict that doubles in
			// the middle of one would charge its rehashing to it.
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			cpu0, eval0, info0 := redisCost(b, rdb)
			for i := 0; i < b.N; i += batch {
				p := rdb.Pipeline()
				var scripts []*redis.Cmd
				for range min(batch, b.N-i) {
					key := "c:" + strconv.FormatInt(n.Add(1), 10)
					p.Set(ctx, key, inProgress, 0)
					count := ""
					if bc.inScript {
						count = "r"
					}
					scripts = append(scripts, p.EvalSha(ctx, complete.Hash(), []string{key}, "tok-0123456789abcdefghij", result, 86400000, count, "c"))
				}
				if !bc.inScript {
					p.Info(ctx, "replication")
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				for _, s := range scripts {
					if v, err := s.Int64(); err != nil || v != 1 {
						b.Fatalf("complete.lua: %v, %v; want 1 (stored, no replica)", v, err)
					}
				}
			}
			cpu1, eval1, info1 := redisCost(b, rdb)
			us := eval1 - eval0 // a script's INFO is in its EVALSHA's time
			if !bc.inScript {
				us += info1 - info0
			}
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "redis-cpu-µs/op")
			b.ReportMetric(us/float64(b.N), "redis-cmd-µs/op")
		})
	}
}

// redisCost reads Redis's CPU seconds so far and the µs spent inside
// EVALSHA and inside INFO.
func redisCost(b *testing.B, rdb *redis.Client) (cpu, evalsha, info float64) {
	b.Helper()
	stats, err := rdb.Info(context.Background(), "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(stats) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_cpu_user:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
		if v, ok := strings.CutPrefix(line, "used_cpu_sys:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
		for stat, us := range map[string]*float64{"cmdstat_evalsha:": &evalsha, "cmdstat_info:": &info} {
			if rest, ok := strings.CutPrefix(line, stat); ok {
				for f := range strings.SplitSeq(rest, ",") {
					if v, ok := strings.CutPrefix(f, "usec="); ok {
						*us, _ = strconv.ParseFloat(v, 64)
					}
				}
			}
		}
	}
	return cpu, evalsha, info
}

// redisCPU is a server's CPU seconds so far (INFO used_cpu_user + sys).
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	cpu, _, _ := redisCost(b, rdb)
	return cpu
}

// commandCalls is how many times a server ran cmd (INFO commandstats).
func commandCalls(b *testing.B, rdb *redis.Client, cmd string) int64 {
	b.Helper()
	stats, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(stats) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

package loadtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// capResult is one capacity measurement against one Redis server.
type capResult struct {
	workload string
	bodySize int
	ops      int64
	elapsed  time.Duration
	cpu      float64 // Redis CPU seconds (user+sys) used

	diagnostic bool // a comparison row, not what the capacity plan uses
}

// rate is operations per second.
func (c capResult) rate() float64 { return float64(c.ops) / c.elapsed.Seconds() }

// utilisation is the fraction of one core Redis used.
func (c capResult) utilisation() float64 { return c.cpu / c.elapsed.Seconds() }

// cpuPerOp is the Redis CPU time per operation.
func (c capResult) cpuPerOp() time.Duration {
	return time.Duration(c.cpu / float64(c.ops) * float64(time.Second))
}

// saturation is the operations per second one Redis core can serve at this
// CPU cost per operation: ops/s at 100% of a core.
func (c capResult) saturation() float64 { return float64(c.ops) / c.cpu }

// capacity measures, per body size, how many acquire+complete pairs (first
// requests) and acquire-only replays one Redis server runs per second, and
// how much of a core that takes; the same again with acquire.lua alone (the
// path of a client that cannot pipeline, a diagnostic row the plan does not
// use); and a trivial EVALSHA.
func capacity(ctx context.Context, cfg Config, rdb *redis.Client, prefix string, stdout, stderr io.Writer) ([]capResult, error) {
	var out []capResult
	type acquirePath struct {
		name          string
		client        redis.Scripter
		first, replay string
		diagnostic    bool
	}
	paths := []acquirePath{
		{"", rdb, "first request: SET NX GET, EVALSHA complete", "replay: SET NX GET", false},
		{"-script", scriptsOnly{rdb}, "first request, acquire.lua alone: EVALSHA acquire + EVALSHA complete", "replay, acquire.lua alone: EVALSHA acquire", true},
	}
	for i, size := range cfg.CapacitySizes {
		// Every other size measures the paths in the other order, so that
		// neither always runs on the fuller keyspace; the report keeps the
		// idemgen rows first.
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		var rows [2][2]capResult
		for _, j := range order {
			path := paths[j]
			rs, err := capacityOfStore(ctx, cfg, rdb, redisstore.New(path.client, redisstore.WithPrefix(fmt.Sprintf("%s:cap%d%s", prefix, i, path.name))), size, stderr)
			if err != nil {
				return nil, err
			}
			rs[0].workload, rs[1].workload = path.first, path.replay
			rs[0].diagnostic, rs[1].diagnostic = path.diagnostic, path.diagnostic
			rows[j] = rs
		}
		out = append(out, rows[0][0], rows[0][1], rows[1][0], rows[1][1])
	}
	fmt.Fprintf(stderr, "idemload: capacity: trivial EVALSHA, %v\n", cfg.CapacityDuration)
	trivial := redis.NewScript("return 1")
	res, err := measureCapacity(ctx, rdb, cfg, func() error {
		return trivial.Run(ctx, rdb, []string{prefix + ":trivial"}).Err()
	})
	if err != nil {
		return nil, err
	}
	res.workload = "floor: EVALSHA `return 1`"
	out = append(out, res)
	writeCapacity(stdout, cfg, out)
	return out, nil
}

// capacityOfStore measures first requests (acquire+complete of new keys)
// and then replays (acquire of the keys just completed) through store.
func capacityOfStore(ctx context.Context, cfg Config, rdb *redis.Client, store *redisstore.Store, size int, stderr io.Writer) ([2]capResult, error) {
	body := jsonBody(size, 7)
	fmt.Fprintf(stderr, "idemload: capacity: acquire+complete, %d-byte bodies, %v\n", size, cfg.CapacityDuration)
	var keys atomic.Int64
	first, err := measureCapacity(ctx, rdb, cfg, func() error {
		return storeRecord(ctx, store, fmt.Sprintf("CreateOrder::%036d", keys.Add(1)), body, true, time.Hour)
	})
	if err != nil {
		return [2]capResult{}, err
	}
	first.bodySize = size

	fmt.Fprintf(stderr, "idemload: capacity: replay acquire, %d-byte bodies, %v\n", size, cfg.CapacityDuration)
	stored := keys.Load()
	var n atomic.Int64
	fp := func(key string) string { s := sha256.Sum256([]byte(key)); return hex.EncodeToString(s[:]) }
	replay, err := measureCapacity(ctx, rdb, cfg, func() error {
		key := fmt.Sprintf("CreateOrder::%036d", 1+n.Add(1)%stored)
		acq, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: rand.Text(), Fingerprint: fp(key), Lease: 30 * time.Second})
		if err == nil && acq.Outcome != idemstore.OutcomeReplay {
			err = fmt.Errorf("loadtest: replay acquire: outcome %d, want replay", acq.Outcome)
		}
		return err
	})
	if err != nil {
		return [2]capResult{}, err
	}
	replay.bodySize = size
	return [2]capResult{first, replay}, nil
}

// measureCapacity runs op from cfg.CapacityConcurrency goroutines for
// cfg.CapacityDuration and measures its rate and Redis's CPU time.
func measureCapacity(ctx context.Context, rdb *redis.Client, cfg Config, op func() error) (capResult, error) {
	cpu0, err := cpuSeconds(ctx, rdb)
	if err != nil {
		return capResult{}, err
	}
	var ops atomic.Int64
	var once sync.Once
	var first error
	deadline := time.Now().Add(cfg.CapacityDuration)
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.CapacityConcurrency {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if err := op(); err != nil {
					once.Do(func() { first = err })
					return
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return capResult{}, first
	}
	cpu1, err := cpuSeconds(ctx, rdb)
	if err != nil {
		return capResult{}, err
	}
	return capResult{ops: ops.Load(), elapsed: elapsed, cpu: cpu1 - cpu0}, nil
}

func writeCapacity(w io.Writer, cfg Config, rs []capResult) {
	fmt.Fprintf(w, "## Operations per Redis shard\n\n")
	fmt.Fprintf(w, "One redis-server, %d concurrent callers through redisstore.Store for %v per row, client and server on the same machine. Redis CPU is INFO used_cpu_user+used_cpu_sys over the row; \"ops/s at one full core\" is ops / Redis CPU seconds, the rate at which the single-threaded server saturates.\n\n",
		cfg.CapacityConcurrency, cfg.CapacityDuration)
	fmt.Fprintln(w, "| workload | body | ops | ops/s measured | Redis CPU (of one core) | Redis CPU per op | ops/s at one full core |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
	for _, r := range rs {
		body := "-"
		if r.bodySize > 0 {
			body = fmt.Sprint(r.bodySize)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.0f%% | %.1f µs | %.0f |\n",
			r.workload, body, r.ops, r.rate(), 100*r.utilisation(), float64(r.cpuPerOp())/float64(time.Microsecond), r.saturation())
	}
	fmt.Fprintln(w)
}

// Capacity planning assumptions, stated in the report.
const (
	planHeadroom    = 0.5      // plan each shard at half its saturation rate
	planShardMemory = 25 << 30 // bytes of records per shard (a 32 GiB node, room for fragmentation and fork)
)

// writePlan writes the capacity plan from measured bytes per record and
// measured first requests per second per shard.
func writePlan(w io.Writer, mem []memResult, caps []capResult) {
	type column struct {
		name  string
		bytes float64 // used_memory per record
		sat   float64 // first requests/s at one full core
	}
	var cols []column
	for _, m := range mem {
		if !m.location { // the capacity workload stores a Location header
			continue
		}
		for _, c := range caps {
			if c.bodySize == m.bodySize && !c.diagnostic && strings.HasPrefix(c.workload, "first") {
				comp := ""
				if m.compressed {
					comp = " gzip"
				}
				cols = append(cols, column{fmt.Sprintf("%d B%s", m.bodySize, comp), m.usedPerRecord, c.saturation()})
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "## Capacity plan\n\n")
	fmt.Fprintf(w, "records = rate x retention (replays store nothing); memory = records x used_memory/record; shards = max(ceil(rate / (%.0f%% x first req/s at one full core)), ceil(memory / %d GiB)). Per column:", 100*planHeadroom, planShardMemory>>30)
	for _, c := range cols {
		fmt.Fprintf(w, " %s: %.0f bytes/record, %.0f first req/s per shard;", c.name, c.bytes, c.sat)
	}
	fmt.Fprintf(w, "\n\n| first req/s | retention | records |")
	for _, c := range cols {
		fmt.Fprintf(w, " %s: memory, shards |", c.name)
	}
	fmt.Fprintf(w, "\n|--:|--:|--:|%s\n", strings.Repeat("--:|", len(cols)))
	for _, rate := range []float64{1_000, 10_000, 100_000} {
		for _, ret := range []time.Duration{time.Hour, 24 * time.Hour} {
			records := rate * ret.Seconds()
			fmt.Fprintf(w, "| %s | %.0fh | %s |", thousands(rate), ret.Hours(), thousands(records))
			for _, c := range cols {
				bytes := records * c.bytes
				shards := max(math.Ceil(rate/(planHeadroom*c.sat)), math.Ceil(bytes/planShardMemory))
				fmt.Fprintf(w, " %s, %.0f |", gib(bytes), shards)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
}

// thousands formats a whole number with comma separators.
func thousands(f float64) string {
	s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// gib formats bytes in GiB.
func gib(b float64) string { return fmt.Sprintf("%.1f GiB", b/(1<<30)) }

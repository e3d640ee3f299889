package loadtest

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// Config is one run of the harness, as its flags set it.
type Config struct {
	Mode        string        // compare, memory, capacity, large or all
	Redis       string        // host:port of a loopback Redis; "" starts a child redis-server
	RedisServer string        // redis-server binary for the child
	RedisCPUs   string        // taskset -c list the child is pinned to; "" leaves it unpinned
	Timeout     time.Duration // bound of the whole run

	// compare mode
	Variants    []string
	Duration    time.Duration // per phase, variant and round
	Requests    int           // per phase, variant and round
	Warmup      time.Duration // unmeasured first requests per variant before the rounds
	Concurrency int
	Rounds      int
	BodySize    int // response body bytes
	DupKeys     int
	DupFanout   int
	CPUProfile  string
	NoReplays   bool   // measure first requests only
	Chart       string // file the compare run's throughput chart is written to (.svg, .png); "" for none

	// memory mode
	MemoryRecords int
	MemoryAPI     string // the API identity in memory mode's keys (idemop.Operation.API); "" for none
	MemorySizes   []int
	CompressOver  int

	// large mode
	LargeRequests    int
	LargeConcurrency int
	LargeBody        int

	// capacity mode
	CapacityDuration    time.Duration
	CapacityConcurrency int
	CapacitySizes       []int
}

// Run is the idemload command: it parses args, runs the harness and writes
// the markdown report to stdout and progress to stderr. It returns the exit
// status: 0 on success, 1 when the run failed or an invariant broke (idemgen
// ran a key twice), 2 on bad flags.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "idemload: %v\n", err)
		return 2
	}
	if err := run(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "idemload: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("idemload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: idemload [flags]\n\nLoad harness for idemgen's runtime, loopback only. Prints markdown to stdout.")
		fs.PrintDefaults()
	}
	var variants, memSizes, capSizes string
	fs.StringVar(&cfg.Mode, "mode", "compare", "compare (five variants: throughput, latency, duplicates), memory (bytes per record), capacity (acquire+complete pairs/s per shard), large (heap per in-flight large response; not in all) or all")
	fs.StringVar(&cfg.Redis, "redis", "", "host:port of a loopback Redis to use; empty starts a redis-server child on a free loopback port, persistence off, killed at exit")
	fs.StringVar(&cfg.RedisServer, "redis-server", "redis-server", "redis-server binary for the child server")
	fs.StringVar(&cfg.RedisCPUs, "redis-cpus", "", "pin the child redis-server to these CPUs (taskset -c list, e.g. 1); run the harness itself under taskset on the others to keep them apart")
	fs.DurationVar(&cfg.Timeout, "timeout", 15*time.Minute, "bound of the whole run")
	fs.StringVar(&variants, "variants", strings.Join(defaultVariants(), ","), "comma-separated variants to compare; diagnostic extras: "+VariantIdemgenNoHeartbeat+", "+VariantIdemgenRawBody+", "+VariantIdemgenRawNoHeartbeat+", "+VariantFloorStore+", "+VariantIdemgenScriptAcquire+", "+VariantFloorAutoPipeline+", "+VariantFloorStoreAutoPipe+"; on a second master with one replica, both started by the harness: "+VariantIdemgenReplica+", "+VariantIdemgenReplicaAcksOff+", "+VariantFloorStoreReplica)
	fs.DurationVar(&cfg.Duration, "duration", 2*time.Second, "length of each measured phase (per variant, per round)")
	fs.IntVar(&cfg.Requests, "requests", 200_000, "most requests of each measured phase (per variant, per round)")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "unmeasured first requests per variant before the rounds")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "concurrent client connections")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "rounds; each runs every variant once, in rotated order")
	fs.IntVar(&cfg.BodySize, "body", 200, "response body size in bytes (a JSON document)")
	fs.IntVar(&cfg.DupKeys, "dup-keys", 200, "keys of the concurrent-duplicate workload")
	fs.IntVar(&cfg.DupFanout, "dup-fanout", 16, "goroutines firing each key at once in the duplicate workload")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the compare mode to this file")
	fs.BoolVar(&cfg.NoReplays, "no-replays", false, "measure first requests only (a CPU profile then holds no replay)")
	fs.StringVar(&cfg.Chart, "chart", "", "write a bar chart of the compare run's first-request and replay throughput, relative to the floor, to this file (.svg or .png)")
	fs.IntVar(&cfg.MemoryRecords, "memory-records", 10000, "records stored per size in memory mode")
	fs.StringVar(&cfg.MemoryAPI, "memory-api", "", "the API identity in memory mode's record keys, as generated servers add it (idemop.Operation.API); empty: none")
	fs.StringVar(&memSizes, "memory-sizes", "200,2048,20480", "response body sizes of memory mode")
	fs.IntVar(&cfg.CompressOver, "compress-over", 1, "redisstore.WithCompression threshold of the compressed measurement (bytes)")
	fs.IntVar(&cfg.LargeRequests, "large-requests", 2000, "first requests of large mode")
	fs.IntVar(&cfg.LargeConcurrency, "large-concurrency", 200, "concurrent requests of large mode")
	fs.IntVar(&cfg.LargeBody, "large-body", 1_000_000, "response body bytes of large mode")
	fs.DurationVar(&cfg.CapacityDuration, "capacity-duration", 5*time.Second, "length of each capacity measurement")
	fs.IntVar(&cfg.CapacityConcurrency, "capacity-concurrency", 64, "concurrent store callers in capacity mode")
	fs.StringVar(&capSizes, "capacity-sizes", "200,2048", "response body sizes of capacity mode")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Variants = splitList(variants)
	var err error
	if cfg.MemorySizes, err = parseSizes(memSizes); err != nil {
		return cfg, fmt.Errorf("-memory-sizes: %w", err)
	}
	if cfg.CapacitySizes, err = parseSizes(capSizes); err != nil {
		return cfg, fmt.Errorf("-capacity-sizes: %w", err)
	}
	return cfg, cfg.validate()
}

// validate checks the bounds that keep a run finite and loopback-only.
func (c Config) validate() error {
	switch {
	case c.Mode != "compare" && c.Mode != "memory" && c.Mode != "capacity" && c.Mode != "large" && c.Mode != "all":
		return fmt.Errorf("-mode %q: want compare, memory, capacity, large or all", c.Mode)
	case c.LargeRequests <= 0 || c.LargeConcurrency <= 0 || c.LargeBody < minBodySize:
		return fmt.Errorf("-large-requests and -large-concurrency must be positive, -large-body at least %d", minBodySize)
	case c.Duration <= 0 || c.Requests <= 0 || c.Concurrency <= 0 || c.Rounds <= 0 || c.Timeout <= 0:
		return errors.New("-duration, -requests, -concurrency, -rounds and -timeout must be positive")
	case c.DupKeys < 0 || c.DupFanout <= 0 || c.MemoryRecords <= 0 || c.CapacityDuration <= 0 || c.CapacityConcurrency <= 0:
		return errors.New("-dup-keys must be >= 0; -dup-fanout, -memory-records, -capacity-duration and -capacity-concurrency positive")
	case c.BodySize < minBodySize:
		return fmt.Errorf("-body must be at least %d", minBodySize)
	}
	if c.Redis != "" && c.RedisCPUs != "" {
		return errors.New("-redis-cpus applies only to the child redis-server (without -redis)")
	}
	if c.Redis != "" {
		if err := checkLoopback(c.Redis); err != nil {
			return err
		}
	}
	return nil
}

// checkLoopback refuses a Redis address that is not on loopback: the
// harness never sends load off the machine.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-redis %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-redis %q: only loopback addresses (127.0.0.1, ::1, localhost) are allowed", addr)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < minBodySize {
			return nil, fmt.Errorf("size %q: want an integer >= %d", f, minBodySize)
		}
		out = append(out, n)
	}
	return out, nil
}

// env describes where the numbers come from.
type env struct {
	goVersion, redisVersion, redisAddr, cpus, date string
	childRedis                                     bool
}

func run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	addr := cfg.Redis
	child := addr == ""
	if child {
		srv, err := redisproc.Start(ctx, redisproc.Options{Path: cfg.RedisServer, CPUs: cfg.RedisCPUs})
		if err != nil {
			return fmt.Errorf("start redis-server (or pass -redis host:port): %w", err)
		}
		defer srv.Stop()
		addr = srv.Addr()
	}
	conns := max(cfg.Concurrency, cfg.CapacityConcurrency, cfg.LargeConcurrency, min(cfg.DupFanout*max(cfg.Concurrency/cfg.DupFanout, 1), 4096)) + 8
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: conns, MinIdleConns: min(conns, 64), ContextTimeoutEnabled: true})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", addr, err)
	}
	e := env{
		goVersion:    runtime.Version(),
		redisVersion: serverVersion(ctx, rdb),
		redisAddr:    addr,
		cpus:         fmt.Sprintf("%d (GOMAXPROCS %d)", runtime.NumCPU(), runtime.GOMAXPROCS(0)),
		date:         time.Now().UTC().Format(time.RFC3339),
		childRedis:   child,
	}
	prefix := "idemload:" + rand.Text()[:8]
	defer func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ccancel()
		if err := deletePrefix(cctx, rdb, prefix); err != nil {
			fmt.Fprintf(stderr, "idemload: cleanup: %v\n", err)
		}
	}()
	writeHeader(stdout, e, cfg)
	if cfg.Mode == "compare" || cfg.Mode == "all" {
		if err := compare(ctx, cfg, rdb, prefix, stdout, stderr); err != nil {
			return err
		}
	}
	if cfg.Mode == "large" {
		if _, err := large(ctx, cfg, rdb, prefix, stdout, stderr); err != nil {
			return err
		}
	}
	var mem []memResult
	var caps []capResult
	var err error
	if cfg.Mode == "memory" || cfg.Mode == "all" {
		if mem, err = memory(ctx, cfg, rdb, child, stdout, stderr); err != nil {
			return err
		}
	}
	if cfg.Mode == "capacity" || cfg.Mode == "all" {
		if caps, err = capacity(ctx, cfg, rdb, prefix, stdout, stderr); err != nil {
			return err
		}
	}
	if len(mem) > 0 && len(caps) > 0 {
		writePlan(stdout, mem, caps)
	}
	return nil
}

// compare runs the five-variant comparison.
func compare(ctx context.Context, cfg Config, rdb *redis.Client, prefix string, stdout, stderr io.Writer) error {
	trips := new(roundTrips)
	trips.count(rdb)
	var repl *replicatedClients
	for _, name := range cfg.Variants {
		if needsReplica(name) && repl == nil {
			r, err := startReplicated(ctx, cfg, rdb.Options().PoolSize)
			if err != nil {
				return err
			}
			defer r.stop()
			fmt.Fprintf(stderr, "idemload: replicated master %s, replica %s\n", r.master.Addr(), r.replica.Addr())
			repl = &r.clients
			trips.count(repl.master)
		}
	}
	vs, err := newVariants(cfg.Variants, rdb, repl, prefix)
	if err != nil {
		return err
	}
	body := jsonBody(cfg.BodySize, 1)
	reqBody := []byte(`{"customer":"cus_3f9a1c","items":[{"sku":"SKU-000042","quantity":2}],"currency":"EUR","note":"leave at the door"}`)
	srv, err := startServer(vs, body)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.close(); err != nil {
			fmt.Fprintf(stderr, "idemload: %v\n", err)
		}
	}()
	client := newClient(max(cfg.Concurrency, cfg.DupFanout*max(cfg.Concurrency/cfg.DupFanout, 1)))
	defer client.CloseIdleConnections()

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	run := rand.Text()[:6]
	for _, v := range vs {
		fmt.Fprintf(stderr, "idemload: warm-up %s (%v)\n", v.name, cfg.Warmup)
		runLoad(ctx, client, loadSpec{
			url: srv.base + "/" + v.name, key: keyFunc(run+"w", v.name, 0), limit: cfg.Requests,
			duration: cfg.Warmup, concurrency: cfg.Concurrency, body: reqBody, want: 201,
		})
	}
	first := map[string]*phaseResult{}
	replay := map[string]*phaseResult{}
	for _, v := range vs {
		first[v.name], replay[v.name] = &phaseResult{}, &phaseResult{}
	}
	for round := range cfg.Rounds {
		for i := range vs {
			v := vs[(round+i)%len(vs)]
			if ctx.Err() != nil {
				return ctx.Err()
			}
			keys := keyFunc(run, v.name, round)
			spec := loadSpec{
				url: srv.base + "/" + v.name, key: keys, limit: cfg.Requests,
				duration: cfg.Duration, concurrency: cfg.Concurrency, body: reqBody, want: 201,
			}
			res, err := measure(ctx, rdb, trips, v, func() phaseResult { return runLoad(ctx, client, spec) })
			if err != nil {
				return err
			}
			first[v.name].add(res)
			if cfg.NoReplays {
				continue
			}
			n := res.requests
			spec.key = func(i int) string { return keys(i % n) }
			res, err = measure(ctx, rdb, trips, v, func() phaseResult { return runLoad(ctx, client, spec) })
			if err != nil {
				return err
			}
			replay[v.name].add(res)
			fmt.Fprintf(stderr, "idemload: round %d %-15s first %8.0f req/s, replay %8.0f req/s\n",
				round+1, v.name, first[v.name].throughput(), replay[v.name].throughput())
		}
	}
	dups := map[string]dupResult{}
	if cfg.DupKeys > 0 {
		parallel := max(cfg.Concurrency/cfg.DupFanout, 1)
		for _, v := range vs {
			fmt.Fprintf(stderr, "idemload: duplicates %s: %d keys x %d goroutines\n", v.name, cfg.DupKeys, cfg.DupFanout)
			dups[v.name] = runDuplicates(ctx, client, dupSpec{
				url: srv.base + "/" + v.name, key: keyFunc(run+"d", v.name, 0),
				keys: cfg.DupKeys, fanout: cfg.DupFanout, parallel: parallel, body: reqBody,
			}, v.runs)
		}
	}
	writeCompare(stdout, cfg, vs, first, replay, dups)
	if cfg.Chart != "" {
		title := fmt.Sprintf("Redis: %d connections, %d-byte responses", cfg.Concurrency, cfg.BodySize)
		if err := writeChart(cfg.Chart, title, vs, first, replay); err != nil {
			return err
		}
	}
	for _, name := range []string{VariantIdemgen, VariantIdemgenReplica} {
		if d, ok := dups[name]; ok && (d.duplicates > 0 || d.keysNeverRun > 0) {
			return fmt.Errorf("%s ran %d duplicate executions and left %d keys unrun", name, d.duplicates, d.keysNeverRun)
		}
	}
	return nil
}

// measure runs a phase and adds the handler executions, Redis round trips
// (counted by trips, on rdb) and CPU time it caused.
func measure(ctx context.Context, rdb *redis.Client, trips *roundTrips, v *variant, phase func() phaseResult) (phaseResult, error) {
	if v.rdb != nil {
		rdb = v.rdb
	}
	rcpu0, err := cpuSeconds(ctx, rdb)
	if err != nil {
		return phaseResult{}, err
	}
	var replica0, replica1 float64
	if v.replica != nil {
		if replica0, err = cpuSeconds(ctx, v.replica); err != nil {
			return phaseResult{}, err
		}
	}
	cmds0, runs0, gcpu0 := trips.load(), v.runs.total(), processCPU()
	res := phase()
	gcpu1, cmds1 := processCPU(), trips.load()
	rcpu1, err := cpuSeconds(ctx, rdb)
	if err != nil {
		return phaseResult{}, err
	}
	if v.replica != nil {
		if replica1, err = cpuSeconds(ctx, v.replica); err != nil {
			return phaseResult{}, err
		}
	}
	res.runs = v.runs.total() - runs0
	res.redisCmds = cmds1 - cmds0
	res.goCPU = gcpu1 - gcpu0
	res.redisCPU = time.Duration((rcpu1 - rcpu0 + replica1 - replica0) * float64(time.Second))
	return res, nil
}

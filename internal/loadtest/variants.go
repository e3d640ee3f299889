package loadtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// Names of the variants, in report order.
const (
	VariantBare     = "bare"
	VariantCheckSet = "check-then-set"
	VariantSetNX    = "setnx-lock"
	VariantIdemgen  = "idemgen"
	VariantStrict   = "idemgen-strict" // oapi-codegen's strict server (chi), built by the generated NewStrictHandlerWithIdempotency
	VariantFloor    = "floor"
)

// Diagnostic variants, not run by default: the engine with one cost taken
// away, to attribute its gap to the floor.
const (
	VariantIdemgenNoHeartbeat    = "idemgen-no-heartbeat"          // idem.WithHeartbeat(false)
	VariantIdemgenRawBody        = "idemgen-raw-body"              // Content-Type removed: body hashed as bytes, no JSON canonicalisation
	VariantIdemgenRawNoHeartbeat = "idemgen-raw-body-no-heartbeat" // both
	VariantFloorStore            = "floor-store"                   // the floor plus the Redis writes and capture every stored result needs
	VariantIdemgenScriptAcquire  = "idemgen-script-acquire"        // acquire.lua alone, no SET NX and GET first (a client that cannot pipeline)
	VariantFloorAutoPipeline     = "floor-autopipeline"            // the floor on go-redis's batching client (Client.AutoPipeline, v9.22+)
	VariantFloorStoreAutoPipe    = "floor-store-autopipeline"      // floor-store on go-redis's batching client: the least any store that batches writes
)

const (
	keyHeader          = "Idempotency-Key"
	naiveLock          = 30 * time.Second // lease of the naive SET NX lock
	naiveRetention     = 24 * time.Hour   // how long the naive variants keep results
	pendingMarker      = "\x00pending"    // the value of a naive SET NX lock
	encodedStatusBytes = 2                // naive record: big-endian status, then body
)

// defaultVariants lists the variants compared by default, in report order.
func defaultVariants() []string {
	return []string{VariantBare, VariantCheckSet, VariantSetNX, VariantIdemgen, VariantStrict, VariantFloor}
}

// variant is one way of serving the handler.
type variant struct {
	name string
	// redisCalls says how many Redis round trips the variant makes for a
	// first request and for a replay, by construction (the report also
	// measures them).
	redisFirst, redisReplay string
	protects                bool // whether a replay should not run the handler
	wrap                    func(http.Handler) http.Handler
	// serve, when set, replaces wrap: the variant serves the handler's
	// work its own way (a generated server around a typed handler).
	serve func(body []byte, runs *runCounter) http.Handler
	runs  *runCounter
	// rdb is the client of the server the variant runs on, when it is not
	// the run's (the replicated master): its Redis CPU is that server's,
	// plus its replica's (replica), which shares the machine's cores.
	rdb, replica *redis.Client
}

// runCounter counts handler executions: all of them, and per key for the
// keys it watches (those of the duplicate workload). It keeps no entry per
// throughput request: a map of every key the load sends would make the
// harness's own live heap, and so every garbage collection, grow with each
// request, a cost charged to whichever variant allocates most. It is safe
// for concurrent use.
type runCounter struct {
	tot      atomic.Int64
	watching atomic.Bool
	mu       sync.Mutex     // guards runs
	runs     map[string]int // watched keys only
}

func newRunCounter() *runCounter { return &runCounter{runs: map[string]int{}} }

// add counts one execution for key.
func (c *runCounter) add(key string) {
	c.tot.Add(1)
	if !c.watching.Load() {
		return
	}
	c.mu.Lock()
	if n, ok := c.runs[key]; ok {
		c.runs[key] = n + 1
	}
	c.mu.Unlock()
}

// watch starts counting the executions of key one by one.
func (c *runCounter) watch(key string) {
	c.mu.Lock()
	if _, ok := c.runs[key]; !ok {
		c.runs[key] = 0
	}
	c.mu.Unlock()
	c.watching.Store(true)
}

// total returns the number of executions counted so far.
func (c *runCounter) total() int64 { return c.tot.Load() }

// of returns the executions of key, a watched key.
func (c *runCounter) of(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[key]
}

// handler is the trivial operation every variant serves: it reads the
// request body, counts its run under the request's key and answers 201 with
// a fixed JSON body.
func handler(body []byte, runs *runCounter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		runs.add(r.Header.Get(keyHeader))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
}

// newVariants builds the named variants on rdb, and those that need a
// replica on repl (a master with one replica; nil when none is), with every
// Redis key under prefix.
func newVariants(names []string, rdb *redis.Client, repl *replicatedClients, prefix string) ([]*variant, error) {
	var vs []*variant
	for _, name := range names {
		v := &variant{name: name, runs: newRunCounter()}
		switch name {
		case VariantBare:
			v.redisFirst, v.redisReplay = "0", "0"
			v.wrap = func(h http.Handler) http.Handler { return h }
		case VariantCheckSet:
			v.redisFirst, v.redisReplay, v.protects = "2 (GET, SET)", "1 (GET)", true
			v.wrap = checkThenSet(rdb, prefix+":cts:")
		case VariantSetNX:
			v.redisFirst, v.redisReplay, v.protects = "2 (SET NX, SET)", "2 (SET NX, GET)", true
			v.wrap = setNXLock(rdb, prefix+":nx:")
		case VariantIdemgen:
			v.redisFirst, v.redisReplay, v.protects = "2 (SET NX GET; EVALSHA complete + INFO per batch; batched)", "1 (SET NX GET; batched)", true
			eng := idem.NewEngine(steadyStore(rdb, prefix+":idem"))
			v.wrap = eng.Middleware(idemop.Operation{ID: "CreateOrder", Method: http.MethodPost, Path: "/orders"})
		case VariantIdemgenScriptAcquire:
			v.redisFirst, v.redisReplay, v.protects = "2 (EVALSHA acquire, complete)", "1 (EVALSHA acquire)", true
			// A client that can only run scripts: the store cannot
			// pipeline SET NX and GET and runs acquire.lua every time.
			eng := idem.NewEngine(steadyStore(scriptsOnly{rdb}, prefix+":"+name))
			v.wrap = eng.Middleware(idemop.Operation{ID: "CreateOrder", Method: http.MethodPost, Path: "/orders"})
		case VariantIdemgenNoHeartbeat, VariantIdemgenRawBody, VariantIdemgenRawNoHeartbeat:
			v.redisFirst, v.redisReplay, v.protects = "2 (SET NX GET; EVALSHA complete + INFO per batch)", "1 (SET NX GET)", true
			v.wrap = diagnosticEngine(rdb, prefix+":"+name,
				name != VariantIdemgenRawBody, name != VariantIdemgenNoHeartbeat)
		case VariantStrict:
			v.redisFirst, v.redisReplay, v.protects = "2 (SET NX GET; EVALSHA complete + INFO per batch)", "1 (SET NX GET)", true
			v.serve = strictServer(steadyStore(rdb, prefix+":"+name))
		case VariantFloor:
			v.redisFirst, v.redisReplay = "2 (EVALSHA return 1)", "2 (EVALSHA return 1)"
			v.wrap = floor(rdb, prefix+":floor:")
		case VariantFloorAutoPipeline:
			// The floor's two EVALSHA on go-redis's batching client, which
			// merges concurrent callers' commands into shared pipelines:
			// what the floor gains from batching, to set idemgen's own
			// batching (redisstore's lanes) against.
			ap, err := rdb.AutoPipeline()
			if err != nil {
				return nil, err
			}
			v.redisFirst, v.redisReplay = "2 (EVALSHA return 1, batched)", "2 (EVALSHA return 1, batched)"
			v.wrap = floor(ap, prefix+":floor-autopipeline:")
		case VariantFloorStore:
			v.redisFirst, v.redisReplay = "2 (EVALSHA SET PX)", "2 (EVALSHA SET PX)"
			v.wrap = floorStore(rdb, prefix+":floor-store:")
		case VariantIdemgenReplica, VariantIdemgenReplicaAcksOff:
			if repl == nil {
				return nil, errors.New("loadtest: variant " + name + " needs the replicated master")
			}
			v.redisFirst, v.redisReplay, v.protects = "2 (SET NX GET; EVALSHA complete + WAIT per batch; batched)", "1 (SET NX GET; batched)", true
			if name == VariantIdemgenReplicaAcksOff {
				v.redisFirst = "2 (SET NX GET; EVALSHA complete; batched)"
			}
			v.rdb, v.replica = repl.master, repl.replica
			var opts []redisstore.Option
			if name == VariantIdemgenReplicaAcksOff {
				opts = append(opts, redisstore.WithReplicaAcks(0, 0))
			}
			eng := idem.NewEngine(steadyStore(repl.master, prefix+":"+name, opts...))
			v.wrap = eng.Middleware(idemop.Operation{ID: "CreateOrder", Method: http.MethodPost, Path: "/orders"})
		case VariantFloorStoreReplica:
			if repl == nil {
				return nil, errors.New("loadtest: variant " + name + " needs the replicated master")
			}
			v.redisFirst, v.redisReplay, v.rdb, v.replica = "2 (EVALSHA SET PX)", "2 (EVALSHA SET PX)", repl.master, repl.replica
			v.wrap = floorStore(repl.master, prefix+":floor-store-replica:")
		case VariantFloorStoreAutoPipe:
			// floor-store's two writes on the batching client: what a
			// first request costs any store that batches, before it
			// checks anything.
			ap, err := rdb.AutoPipeline()
			if err != nil {
				return nil, err
			}
			v.redisFirst, v.redisReplay = "2 (EVALSHA SET PX, batched)", "2 (EVALSHA SET PX, batched)"
			v.wrap = floorStore(ap, prefix+":floor-store-autopipeline:")
		default:
			return nil, errors.New("loadtest: unknown variant " + strconv.Quote(name))
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// steadyStore is a store on c under prefix, as a new deployment builds it
// (redisstore.New: one key layout from the first request).
func steadyStore(c redis.Scripter, prefix string, opts ...redisstore.Option) *redisstore.Store {
	return redisstore.New(c, append([]redisstore.Option{redisstore.WithPrefix(prefix)}, opts...)...)
}

// scriptsOnly hides every method of a client but the scripting ones.
type scriptsOnly struct{ redis.Scripter }

// diagnosticEngine is idemgen's engine with the heartbeat off (noHeartbeat)
// and/or the request's Content-Type removed before it (rawBody), so that the
// body is fingerprinted as bytes instead of canonical JSON. It approximates
// what the engine would cost without those two costs.
func diagnosticEngine(rdb *redis.Client, prefix string, noHeartbeat, rawBody bool) func(http.Handler) http.Handler {
	eng := idem.NewEngine(steadyStore(rdb, prefix), idem.WithHeartbeat(!noHeartbeat))
	mw := eng.Middleware(idemop.Operation{ID: "CreateOrder", Method: http.MethodPost, Path: "/orders"})
	if !rawBody {
		return mw
	}
	return func(next http.Handler) http.Handler {
		protected := mw(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Content-Type")
			protected.ServeHTTP(w, r)
		})
	}
}

// checkThenSet is the naive middleware most hand-rolled idempotency starts
// as: GET the key; if present replay it, else run the handler and SET the
// result. Two requests that GET before either SETs both run the handler.
func checkThenSet(rdb *redis.Client, prefix string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := prefix + r.Header.Get(keyHeader)
			stored, err := rdb.Get(r.Context(), key).Bytes()
			switch {
			case err == nil:
				writeNaiveRecord(w, stored)
				return
			case !errors.Is(err, redis.Nil):
				http.Error(w, "store unavailable", http.StatusServiceUnavailable)
				return
			}
			rec := newBuffer()
			next.ServeHTTP(rec, r)
			// The result is stored whatever happens, as the naive version does.
			_ = rdb.Set(r.Context(), key, rec.encode(), naiveRetention).Err()
			rec.writeTo(w)
		})
	}
}

// setNXLock is the naive lock: SET key pending NX PX; the winner runs the
// handler and overwrites the lock with the result; a loser GETs the key and
// replays a result or answers 409 while it is pending.
func setNXLock(rdb *redis.Client, prefix string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			key := prefix + r.Header.Get(keyHeader)
			won, err := rdb.SetNX(ctx, key, pendingMarker, naiveLock).Result()
			if err != nil {
				http.Error(w, "store unavailable", http.StatusServiceUnavailable)
				return
			}
			if !won {
				stored, err := rdb.Get(ctx, key).Bytes()
				switch {
				case errors.Is(err, redis.Nil) || (err == nil && string(stored) == pendingMarker):
					http.Error(w, "in progress", http.StatusConflict)
				case err != nil:
					http.Error(w, "store unavailable", http.StatusServiceUnavailable)
				default:
					writeNaiveRecord(w, stored)
				}
				return
			}
			rec := newBuffer()
			next.ServeHTTP(rec, r)
			_ = rdb.Set(ctx, key, rec.encode(), naiveRetention).Err()
			rec.writeTo(w)
		})
	}
}

// floor is the cheapest conceivable Redis-backed protection: the handler
// between two EVALSHA calls of a script that only returns 1. The engine is
// measured against it.
func floor(rdb redis.Scripter, prefix string) func(http.Handler) http.Handler {
	script := redis.NewScript("return 1")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			keys := []string{prefix + r.Header.Get(keyHeader)}
			if err := script.Run(ctx, rdb, keys).Err(); err != nil {
				http.Error(w, "store unavailable", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
			_ = script.Run(ctx, rdb, keys).Err()
		})
	}
}

// floorStore is the floor plus what any design that stores results must do
// for a first request, and nothing else: each EVALSHA writes the key with a
// TTL (SET ... PX: a lease marker, then the result), and the response is
// captured to be stored. It checks nothing and replays nothing (every
// request runs the handler), so it bounds from below what a first request
// of any store-backed idempotency layer costs.
func floorStore(rdb redis.Scripter, prefix string) func(http.Handler) http.Handler {
	set := redis.NewScript("return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			keys := []string{prefix + r.Header.Get(keyHeader)}
			if err := set.Run(ctx, rdb, keys, pendingMarker, naiveLock.Milliseconds()).Err(); err != nil {
				http.Error(w, "store unavailable", http.StatusServiceUnavailable)
				return
			}
			rec := newBuffer()
			next.ServeHTTP(rec, r)
			_ = set.Run(ctx, rdb, keys, rec.encode(), naiveRetention.Milliseconds()).Err()
			rec.writeTo(w)
		})
	}
}

// buffer is the response recorder of the naive variants.
type buffer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newBuffer() *buffer { return &buffer{header: http.Header{}} }

// Header implements http.ResponseWriter.
func (b *buffer) Header() http.Header { return b.header }

// WriteHeader implements http.ResponseWriter.
func (b *buffer) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// Write implements http.ResponseWriter.
func (b *buffer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// encode is the stored form: the status as two big-endian bytes, then the
// body. The naive variants store no headers; they replay JSON.
func (b *buffer) encode() []byte {
	out := make([]byte, encodedStatusBytes, encodedStatusBytes+b.body.Len())
	binary.BigEndian.PutUint16(out, uint16(b.status))
	return append(out, b.body.Bytes()...)
}

// writeTo sends the buffered response.
func (b *buffer) writeTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

// writeNaiveRecord replays a record stored by buffer.encode.
func writeNaiveRecord(w http.ResponseWriter, stored []byte) {
	if len(stored) < encodedStatusBytes {
		http.Error(w, "corrupt record", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(binary.BigEndian.Uint16(stored)))
	_, _ = w.Write(stored[encodedStatusBytes:])
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Store is the [idemstore.Store] on Redis: one string per key, changed only by
// the scripts of package lua and by two plain commands, and timed only by
// Redis (a lease's deadline is its record's expiry). It works with any
// go-redis client (Client, ClusterClient, Ring, UniversalClient), because
// every command touches exactly one key, and it is safe for concurrent use.
//
// A first request costs two round trips (acquire, complete), a replay or a
// mismatch one, a conflict two. The calls of concurrent requests share
// pipelines: under load many requests' commands go out in one write, while
// a lone request waits for nothing. Records must not be evicted and the
// scripts must run: the store refuses a Redis whose maxmemory-policy evicts
// (unless WithEvictionRunsMayRepeat) or that denies the scripts (see
// [Store.Check]).
//
// Every error it returns, other than [idemstore.ErrNotOwner] and the argument
// checks, is a *[idemstore.StoreError], which matches [idemstore.ErrStoreUnavailable]
// under errors.Is.
type Store struct {
	rdb          redis.Scripter
	pipe         pipeliner // rdb, when it can pipeline plain commands; else nil
	proc         processor // rdb, when it can send any command; else nil
	prefix       string
	compressOver int           // body size above which bodies are gzipped; 0: never
	abandonedTTL time.Duration // lifetime of an in-progress record past its lease
	abandonedMS  int64         // abandonedTTL in whole ms, rounded up

	acquire, complete, release, extend *redis.Script

	checkEvery       time.Duration // WithCheckInterval
	evictionAccepted bool          // WithEvictionRunsMayRepeat
	clientProblem    string        // what is wrong with rdb's options, for Check; "" if nothing
	lanes            lanes         // the batches of concurrent calls (batch.go)
	acks             replicaAcks   // WithReplicaAcks, and what the checks read of replicas (replica.go)
	durability       durability    // WithWarnings, and the last warning (durability.go)
	log              *slog.Logger  // WithLogger

	unsized bool       // WithUnsizedRecords
	layout  layoutGate // WithPreviousLayoutIgnored, and whether the key layouts were verified (layout.go)

	lastTTL  atomic.Pointer[boxedMS] // the TTL of the last acquire's SET, boxed (ttlArg)
	noSetGet atomic.Bool             // the server refused SET NX GET (before Redis 7.0): acquire sends SET NX and GET
	verdict  atomic.Pointer[verdict] // the last verification's; nil before the first (check.go)
	mu       sync.Mutex              // guards flight
	flight   *flight                 // the verification acquires wait for, if one runs
}

var (
	_ idemstore.Store          = (*Store)(nil)
	_ idemstore.OperationNamer = (*Store)(nil)
)

// pipeliner is what Acquire's plain commands need of a client; every
// go-redis client has it.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// processor is what the owner-only scripts' EVALSHA needs of a client
// (see evalsha); every go-redis client has it.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Option configures a [Store].
type Option func(*Store)

// WithLogger sets the logger of the store's own warnings: a go-redis client
// built without ContextTimeoutEnabled, and a server that keeps records in
// memory only (see [WithWarnings]). The default is log/slog's default
// logger at the time New runs; nil discards them.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		s.log = l
	}
}

// WithPrefix sets the prefix of stored keys: the record of a key k is
// stored at prefix + ":" + k, or at k itself when prefix is empty. The
// default is [DefaultPrefix].
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// WithCompression gzips stored response bodies longer than threshold bytes
// when that makes them smaller. Replays are decompressed transparently. The
// default is [DefaultCompressOver]; a threshold <= 0 stores bodies as they
// are. At most 2 x GOMAXPROCS bodies are compressed at once (a compressor
// holds about 800 KB and a buffer as large as the largest body it
// compressed); a body that finds them all busy is stored as it is rather
// than wait inside its completion's store timeout.
func WithCompression(threshold int) Option {
	// Memory, not Redis CPU, decides how many shards a deployment needs: a
	// 2 KiB JSON record takes a third of the memory compressed
	// (BENCHMARKS.md, memory per record), for a few tens of µs of CPU on
	// its first request.
	return func(s *Store) { s.compressOver = max(threshold, 0) }
}

// WithAbandonedTTL sets how long an in-progress record outlives its lease
// deadline before Redis deletes it. Until then a later acquire takes the
// record over with the next fence number; afterwards it starts again at
// fence 1. The default is [idemstore.DefaultRetention]; d <= 0 keeps the default.
func WithAbandonedTTL(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.abandonedTTL = d
		}
	}
}

// WithUnsizedRecords writes completed records in format 2, without their
// body's size, as releases before the sized format (format 3) read them;
// the store reads every format either way. A record without its size that
// Redis cut short cannot be told from a whole one, so it is only for
// records that a process of such a release reads, as during a rolling
// upgrade (package previouslayout).
func WithUnsizedRecords() Option {
	return func(s *Store) { s.unsized = true }
}

// Defaults of the options.
const (
	DefaultPrefix       = "idem"  // key prefix (WithPrefix)
	DefaultCompressOver = 1 << 10 // stored bodies above this many bytes are gzipped (WithCompression)
)

// New returns a store on rdb configured by opts. Build rdb with
// ContextTimeoutEnabled: true, so that store calls end with the engine's
// store timeout (New logs a warning, and [Store.Check] fails, otherwise).
// Before its first acquire, and every check interval after, the store
// verifies what Check does of the server (see Check); while the server may
// evict records or denies the scripts, Acquire fails with an error matching
// [idemstore.ErrStoreMisconfigured].
func New(rdb redis.Scripter, opts ...Option) *Store {
	s := &Store{
		rdb:          rdb,
		prefix:       DefaultPrefix,
		abandonedTTL: idemstore.DefaultRetention,
		compressOver: DefaultCompressOver,
		acquire:      redis.NewScript(lua.Acquire),
		complete:     redis.NewScript(lua.Complete),
		release:      redis.NewScript(lua.Release),
		extend:       redis.NewScript(lua.Extend),
		checkEvery:   DefaultCheckInterval,
		acks:         replicaAcks{fixed: -1, timeout: DefaultReplicaAckTimeout},
		log:          slog.Default(),
	}
	s.pipe, _ = rdb.(pipeliner)
	if s.pipe != nil {
		s.lanes.plain = newLane(s.pipe)
	}
	s.proc, _ = rdb.(processor)
	for _, opt := range opts {
		opt(s)
	}
	s.abandonedMS, _ = durationMS("abandoned TTL", s.abandonedTTL, idemstore.DefaultRetention) // > 0: no error
	if s.clientProblem = clientProblem(rdb); s.clientProblem != "" {
		// Loud, once per store: Check refuses it, but the engine works on.
		s.log.Warn("redisstore: " + s.clientProblem)
	}
	return s
}

// LoadScripts loads the store's scripts into the Redis script cache (on
// every master, for a ClusterClient), so that the first call of each costs
// one EVALSHA instead of an EVALSHA answered NOSCRIPT and an EVAL. It is
// optional: without it the store falls back to EVAL by itself.
func (s *Store) LoadScripts(ctx context.Context) error {
	for _, script := range []*redis.Script{s.acquire, s.complete, s.release, s.extend} {
		if err := script.Load(ctx, s.rdb).Err(); err != nil {
			return &idemstore.StoreError{Op: "load scripts", Err: err}
		}
	}
	return nil
}

// Acquire implements [idemstore.Store]. A zero req.Lease means [idemstore.DefaultLease].
//
// It first sends, in one round trip, SET key in-progress-record NX PX ttl
// GET: it creates an absent record (fence 1) atomically and without Lua,
// and when the key exists it returns the record there, from which a
// completed record is replayed or another fingerprint refused (before
// Redis 7.0, SET NX and GET pipelined do the same). Only an in-progress record with the same fingerprint (a conflict
// or a takeover) costs a second round trip, through acquire.lua, which
// reads the record's TTL. With a client that cannot pipeline, Acquire runs
// acquire.lua alone.
func (s *Store) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	lease, err := durationMS("lease", req.Lease, idemstore.DefaultLease)
	if err != nil {
		return idemstore.Acquisition{}, err
	}
	if err := checkKeyToken(req.Key, req.Token); err != nil {
		return idemstore.Acquisition{}, err
	}
	if req.Fingerprint == "" || strings.IndexByte(req.Fingerprint, '\n') >= 0 {
		return idemstore.Acquisition{}, errors.New("idem: acquire: fingerprint must be non-empty and free of newlines")
	}
	if err := s.admit(ctx); err != nil {
		return idemstore.Acquisition{}, err
	}
	a := &attempt{s: s, req: req, lease: lease, key: s.storageKey(req.Key), fp: storedFingerprint(req.Fingerprint)}
	// One SET NX GET rather than the script: a plain command costs Redis a
	// third to a half of acquire.lua (BENCHMARKS.md, "Redis work per request"), and
	// rather than SET NX and GET, a command less to send, parse and answer
	// in every batch.
	if s.pipe != nil {
		if acq, done, err := a.acquirePlain(ctx); done {
			return acq, err
		}
	}
	return a.script(ctx)
}

// attempt is one Acquire: its request and what follows from it.
type attempt struct {
	s     *Store
	req   idemstore.AcquireRequest
	lease int64  // req.Lease in ms
	key   string // the record's Redis key
	fp    string // the stored form of req.Fingerprint, which records written at key hold
}

// matches reports whether a record's stored fingerprint, of the given
// format, is this request's.
func (a *attempt) matches(stored string, format int) bool {
	if format == 1 {
		return stored == a.req.Fingerprint
	}
	return stored == a.fp
}

// script runs acquire.lua on the record.
func (a *attempt) script(ctx context.Context) (idemstore.Acquisition, error) {
	s := a.s
	v, err := s.acquire.Run(ctx, s.rdb, []string{a.key}, a.req.Token, a.fp, a.lease+s.abandonedMS, s.abandonedMS, a.req.Fingerprint).Result()
	if err != nil {
		return idemstore.Acquisition{}, s.denied("acquire", err)
	}
	acq, err := decodeAcquireReply(v)
	if err != nil {
		return idemstore.Acquisition{}, &idemstore.StoreError{Op: "acquire", Err: err}
	}
	return acq, nil
}

// acquirePlain is Acquire's first try: one SET key <the record acquire.lua
// would create> NX PX ttl GET, which creates an absent record and
// otherwise returns the record there, leaving it as it is. It creates an
// absent record, replays a completed one and refuses another fingerprint's,
// as the script would; done is false when the script has to decide: an
// in-progress record with this fingerprint, whose TTL tells a live lease
// from an expired one, or a value that is not a record. A server before
// Redis 7.0 refuses NX with GET; the store then sends SET NX and GET, two
// commands in one pipeline, from then on.
func (a *attempt) acquirePlain(ctx context.Context) (acq idemstore.Acquisition, done bool, err error) {
	s := a.s
	k := any(a.key) // boxed once for both commands
	record := inProgressRecord(a.fp, a.req.Token, 1, s.abandonedMS)
	ttl := s.ttlArg(a.lease + s.abandonedMS)
	l := s.lanes.of(ctx, s.rdb, a.key)
	if !s.noSetGet.Load() {
		setGet := redis.NewCmd(ctx, "set", k, record, "nx", "px", ttl, "get")
		c := newCall(ctx, setGet)
		l.do(c) // one pipeline, alone or with other calls' (batch.go)
		c.free()
		v, err := setGet.Text()
		switch {
		case err == redis.Nil:
			return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, true, nil
		case err == nil || !redis.HasErrorPrefix(err, "syntax error"): // "ERR syntax error"; HasErrorPrefix drops "ERR "
			acq, done, _, err = a.decide(v, err)
			return acq, done, err
		}
		s.noSetGet.Store(true)
	}
	set := redis.NewBoolCmd(ctx, "set", k, record, "nx", "px", ttl)
	get := redis.NewStringCmd(ctx, "get", k)
	c := newCall(ctx, set, get)
	l.do(c)
	c.free()
	created, err := set.Result()
	switch {
	case err != nil:
		return idemstore.Acquisition{}, true, s.denied("acquire", err)
	case created:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, true, nil
	}
	acq, done, _, err = a.decide(get.Result())
	return acq, done, err
}

// decide is what the record read at a key (v, err: a GET's reply) answers
// without a script: a replay of a completed record with this fingerprint,
// a mismatch for another fingerprint (done). done is false when the script
// has to decide: an in-progress record with this fingerprint (whose fence
// it returns), whose TTL tells a live lease from an expired one, a value
// that is not a record, or no record.
func (a *attempt) decide(v string, err error) (acq idemstore.Acquisition, done bool, fence int64, _ error) {
	switch {
	case err == redis.Nil:
		return idemstore.Acquisition{}, false, 0, nil
	case err != nil:
		return idemstore.Acquisition{}, true, 0, a.s.denied("acquire", err)
	}
	state, stored, format := recordHead(v)
	switch {
	case format == 0:
		return idemstore.Acquisition{}, false, 0, nil // not a record: the script answers IDEMCORRUPT
	case !a.matches(stored, format):
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, true, 0, nil
	}
	r, err := parseRecord(v)
	switch {
	case err != nil && state == stateCompleted:
		return idemstore.Acquisition{}, true, 0, &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("%w: replay: %v", errMalformedReply, err)}
	case err != nil:
		return idemstore.Acquisition{}, false, 0, nil // the script answers IDEMCORRUPT
	case state != stateCompleted:
		return idemstore.Acquisition{}, false, r.fence, nil // in progress: conflict or takeover, by its TTL
	}
	return idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: r.result}, true, 0, nil
}

// ttlArg returns ms as a command argument. Every acquire of an operation
// sends the same TTL, so the last one's boxed value is kept for the next:
// an int64 above 255 would otherwise cost an allocation per command.
func (s *Store) ttlArg(ms int64) any {
	if last := s.lastTTL.Load(); last != nil && last.ms == ms {
		return last.arg
	}
	s.lastTTL.Store(&boxedMS{ms, ms})
	return ms
}

// boxedMS is a TTL in ms and the same as a command argument.
type boxedMS struct {
	ms  int64
	arg any
}

// recordHead reads the state and the stored fingerprint of a record of
// either format without decoding the rest; format is 0 when v does not
// start as a record does.
func recordHead(v string) (state byte, fp string, format int) {
	if len(v) > 1+fpSize && (v[0] == tagCompleted || v[0] == tagInProgress || isSizedTag(v[0])) {
		if v[0] == tagInProgress {
			return stateInProgress, v[1 : 1+fpSize], 2
		}
		return stateCompleted, v[1 : 1+fpSize], 2
	}
	st, rest, _ := strings.Cut(v, "\n")
	fp, _, ok := strings.Cut(rest, "\n")
	if !ok || fp == "" || len(st) != 1 || (st[0] != stateCompleted && st[0] != stateInProgress) {
		return 0, "", 0
	}
	return st[0], fp, 1
}

// inProgressRecord is the in-progress record of an owner, byte for byte as
// acquire.lua writes it; fp is the stored fingerprint.
func inProgressRecord(fp, token string, fence, abandonedMS int64) string {
	var num [20]byte
	var b strings.Builder
	b.Grow(1 + len(fp) + len(token) + 2*len(num) + 2)
	b.WriteByte(tagInProgress)
	b.WriteString(fp)
	b.WriteString(token)
	b.WriteByte('\n')
	b.Write(strconv.AppendInt(num[:0], fence, 10))
	b.WriteByte('\n')
	b.Write(strconv.AppendInt(num[:0], abandonedMS, 10))
	return b.String()
}

// Complete implements [idemstore.Store]. A zero retention means [idemstore.DefaultRetention].
// The body of a record with BodyOmitted set is not stored.
func (s *Store) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	ret, err := durationMS("retention", retention, idemstore.DefaultRetention)
	if err != nil {
		return err
	}
	if err := checkKeyToken(key, token); err != nil {
		return err
	}
	if rec == nil || rec.Status < 100 || rec.Status > 999 {
		return errors.New("idem: complete: record needs a status in 100..999")
	}
	tag, result := encodeResult(rec, s.compressOver, !s.unsized)
	return s.completeAcked(ctx, s.storageKey(key), token, tag, result, ret)
}

// Release implements [idemstore.Store].
func (s *Store) Release(ctx context.Context, key, token string) error {
	if err := checkKeyToken(key, token); err != nil {
		return err
	}
	return s.run(ctx, "release", s.release, s.storageKey(key), token)
}

// Extend implements [idemstore.Store]. A zero lease means [idemstore.DefaultLease]. An owner
// whose lease ran out may still extend it as long as nobody took it over.
func (s *Store) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	ms, err := durationMS("lease", lease, idemstore.DefaultLease)
	if err != nil {
		return err
	}
	if err := checkKeyToken(key, token); err != nil {
		return err
	}
	return s.run(ctx, "extend", s.extend, s.storageKey(key), token, ms+s.abandonedMS, s.abandonedMS)
}

// ExtendFence is [Store.Extend] that also raises the fence the record
// holds to fence, if it is lower: for an owner of a record under two keys
// whose fences must grow together (package previouslayout).
func (s *Store) ExtendFence(ctx context.Context, key, token string, lease time.Duration, fence int64) error {
	ms, err := durationMS("lease", lease, idemstore.DefaultLease)
	if err != nil {
		return err
	}
	if err := checkKeyToken(key, token); err != nil {
		return err
	}
	return s.run(ctx, "extend", s.extend, s.storageKey(key), token, ms+s.abandonedMS, s.abandonedMS, fence)
}

// run runs one of the owner-only scripts on the record at skey, which
// answer 1 (done) or 0 (refused: idemstore.ErrNotOwner). args are its ARGV, the
// owner token first.
func (s *Store) run(ctx context.Context, op string, script *redis.Script, skey string, args ...any) error {
	n, err := s.script(ctx, script, skey, args...).Int64()
	switch {
	case err != nil:
		return s.denied(op, err)
	case n == 1:
		return nil
	case n == 0:
		return idemstore.ErrNotOwner
	}
	return &idemstore.StoreError{Op: op, Err: fmt.Errorf("malformed reply %d", n)}
}

// script runs script on the record at skey with ARGV args: EVALSHA, in
// the store's lane when it has one (batch.go), and EVAL when Redis answers
// NOSCRIPT.
func (s *Store) script(ctx context.Context, script *redis.Script, skey string, args ...any) *redis.Cmd {
	switch {
	case s.proc == nil: // a wrapper that only runs scripts
		return script.Run(ctx, s.rdb, []string{skey}, args...)
	case s.lanes.plain == nil:
		cmd := evalsha(ctx, script, skey, args...)
		if s.proc.Process(ctx, cmd) == nil || !noScript(cmd.Err()) {
			return cmd
		}
	default:
		cmd := evalsha(ctx, script, skey, args...)
		c := newCall(ctx, cmd)
		s.lanes.of(ctx, s.rdb, skey).do(c)
		c.free()
		if !noScript(cmd.Err()) {
			return cmd
		}
	}
	return script.Eval(ctx, s.rdb, []string{skey}, args...)
}

// noScript reports whether err is Redis's NOSCRIPT: the script is not in
// its cache. (redis.HasErrorPrefix allocates even for a nil error.)
func noScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// evalsha is the EVALSHA command of script on the record at skey with
// ARGV args, in one argument slice: Script.Run builds the same command
// through two, with an allocation more for its name, the hash and the key,
// on every first request. A Redis that answers NOSCRIPT gets the script by
// EVAL (Script.Run).
func evalsha(ctx context.Context, script *redis.Script, skey string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, append(append(make([]any, 0, 4+len(args)), "evalsha", script.Hash(), 1, skey), args...)...)
	cmd.SetFirstKeyPos(3) // KEYS[1], for a ClusterClient's slot
	return cmd
}

// StorageKey is the Redis key of the record of key: the prefix, ":" and
// key (key itself without a prefix).
func (s *Store) StorageKey(key string) string { return s.storageKey(key) }

// evalshaKeys is evalsha with any number of keys.
func evalshaKeys(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if len(keys) == 1 {
		return evalsha(ctx, script, keys[0], args...)
	}
	a := append(make([]any, 0, 3+len(keys)+len(args)), "evalsha", script.Hash(), len(keys))
	cmd := redis.NewCmd(ctx, append(append(a, stringArgs(keys)...), args...)...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// storageKey is the Redis key of the record of key.
func (s *Store) storageKey(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + ":" + key
}

// durationMS converts d to whole milliseconds for a script, rounding up so
// that a positive duration never becomes 0; zero means def.
func durationMS(name string, d, def time.Duration) (int64, error) {
	if d < 0 {
		return 0, fmt.Errorf("idem: negative %s %v", name, d)
	}
	if d == 0 {
		d = def
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms, nil
}

// checkKeyToken rejects an empty key or owner token, which would make
// records collide or let any empty token pass for the owner, and a token
// with a newline, which separates the fields of a record.
func checkKeyToken(key, token string) error {
	switch {
	case key == "":
		return errors.New("idem: empty storage key")
	case token == "" || strings.IndexByte(token, '\n') >= 0:
		return errors.New("idem: owner token must be non-empty and free of newlines")
	}
	return nil
}

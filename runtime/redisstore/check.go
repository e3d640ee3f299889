package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// The store keeps the promise only on a Redis that keeps every record and
// runs the scripts. It verifies both before its first acquire and again
// every check interval (configuration can change under a running
// service), and it learns of denied scripts from any call's NOPERM. While
// it knows the server misconfigured, Acquire fails with an error matching
// idemstore.ErrStoreMisconfigured, which the engine answers 503
// store-misconfigured without running the handler.
//
// The verdict is cached: an acquire costs two atomic loads for it, and no
// Redis command. A verified verdict goes stale after the check interval,
// and the acquire that finds it stale starts one verification in the
// background. A misconfigured verdict goes stale sooner (misconfiguredRecheck)
// and is verified again by the acquire that finds it stale, while the others
// wait for it: those requests would be refused anyway.
//
// Between checks, the policy watch reads maxmemory-policy again every
// second (policyWatch; one CONFIG GET per server, unless eviction is
// accepted), so that an evicting policy switched on under a running
// service refuses requests within about a second rather than a check
// interval: the first acquire after the second is up makes that read
// before it runs, the others go on meanwhile.

// DefaultCheckInterval is how often the store verifies its server's
// configuration again while it works (WithCheckInterval).
const DefaultCheckInterval = 30 * time.Second

// misconfiguredRecheck bounds how long a misconfigured verdict is trusted:
// scripts denied for a moment must not refuse requests for a whole check
// interval.
const misconfiguredRecheck = time.Second

// policyWatch is how often the store reads maxmemory-policy between checks.
const policyWatch = time.Second

// WithCheckInterval sets how often the store verifies again that its server
// keeps records and runs the scripts (default [DefaultCheckInterval]); a
// misconfigured server is verified again at least every second. d <= 0
// keeps the default.
func WithCheckInterval(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.checkEvery = d
		}
	}
}

// WithEvictionRunsMayRepeat accepts a Redis whose maxmemory-policy may
// evict keys (allkeys-*, volatile-*; every record has a TTL). What it gives
// up: under memory pressure Redis deletes records, and a retry of an
// evicted key runs its handler again, even while the first run still holds
// the key. Without it such a server is refused (503 store-misconfigured).
func WithEvictionRunsMayRepeat() Option {
	return func(s *Store) { s.evictionAccepted = true }
}

// configError is a misconfiguration of the server or the client: the store
// cannot keep the promise on it. Its message says what to change.
type configError struct{ msg string }

func (e *configError) Error() string { return "misconfigured: " + e.msg }

// Is makes errors.Is(err, idemstore.ErrStoreMisconfigured) true.
func (e *configError) Is(target error) bool { return target == idemstore.ErrStoreMisconfigured }

// verdict is what the store knows of its server's configuration.
type verdict struct {
	err  *configError  // nil: verified
	due  atomic.Uint32 // dueCheck and dueWatch, set by timers
	busy atomic.Bool   // a background verification, or a policy watch, runs
}

// Bits of verdict.due.
const (
	dueCheck = 1 << iota // the verdict is due for a full verification
	dueWatch             // the policy is due to be read again (policyWatch)
)

// flight is one verification that several acquires wait for.
type flight struct {
	done chan struct{}
	err  error // the verification's: a *idemstore.StoreError, or nil
}

// Check verifies that the store can keep its promise: Redis answers (on a
// Cluster, every master), the four scripts load (SCRIPT LOAD) and run
// (EVAL, EVALSHA), the maxmemory-policy is noeviction (read with CONFIG
// GET, or from INFO memory where CONFIG is renamed or denied) unless
// [WithEvictionRunsMayRepeat] accepts eviction, and the go-redis client
// honours context deadlines (Options.ContextTimeoutEnabled), so that a hung
// Redis costs a request the store timeout and no more. Call it from a
// startup or readiness probe. The engine does not depend on it: the store
// verifies the same (but for the client option, which it only logs) before
// its first acquire and every check interval. It also reads each master's
// replicas and persistence: the replicas decide the completions' WAIT
// ([WithReplicaAcks]; Check waits, as long as ctx allows, for the Sentinel
// of a master that has no replica connected to say whether it lists one),
// and a master that keeps records in memory only is
// warned about ([WithWarnings]), not refused. Until it finds none, it reads
// whether the upgrade window of package previouslayout is open on the
// server ([Store.KeyLayout]): a store built without that package refuses
// such a server, naming the window's end, unless
// [WithPreviousLayoutIgnored].
//
// It returns nil, an error matching [idemstore.ErrStoreMisconfigured] that says
// what to change, or one matching only [idemstore.ErrStoreUnavailable] when
// Redis could not be asked. A server that implements neither CONFIG nor
// INFO memory (the in-process miniredis) has no maxmemory, and passes.
func (s *Store) Check(ctx context.Context) error {
	err := s.verify(ctx)
	if err == nil && s.acks.sentinels.await(ctx) {
		err = s.verify(ctx) // with what the Sentinels found meanwhile say
	}
	if err != nil && !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		return err
	}
	if s.clientProblem != "" {
		err = errors.Join(err, &idemstore.StoreError{Op: "check", Err: &configError{msg: s.clientProblem}})
	}
	return err
}

// admit is Acquire's gate: nil when the verdict lets an acquire run, else
// the misconfiguration or the failure to verify. It runs a Redis command
// only when the verdict is missing or due.
func (s *Store) admit(ctx context.Context) error {
	v := s.verdict.Load()
	if v != nil && v.err == nil && v.due.Load() == 0 {
		return nil
	}
	switch {
	case v == nil || v.err != nil && v.due.Load()&dueCheck != 0:
		// Not verified yet, or misconfigured and due: verify now. The
		// acquires that arrive meanwhile wait for the same verification.
		return s.verifyShared(ctx)
	case v.err != nil:
		return &idemstore.StoreError{Op: "acquire", Err: v.err}
	}
	// Verified and due: verify again in the background, this acquire runs;
	// or read the policy, before this acquire runs.
	if v.busy.Swap(true) {
		return nil
	}
	if v.due.Load()&dueCheck == 0 {
		return s.watchPolicy(ctx, v)
	}
	timeout := idemstore.DefaultTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	go func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := s.verify(bg); err != nil && !errors.Is(err, idemstore.ErrStoreMisconfigured) {
			// Could not ask: keep the verdict, try again a little later.
			v.due.And(^uint32(dueCheck))
			time.AfterFunc(min(s.checkEvery, misconfiguredRecheck), func() { v.due.Or(dueCheck) })
			v.busy.Store(false)
		}
	}()
	return nil
}

// verifyShared runs one verification for every acquire that waits for it,
// and returns its error, as an acquire's.
func (s *Store) verifyShared(ctx context.Context) error {
	s.mu.Lock()
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		s.flight = f
		s.mu.Unlock()
		f.err = s.verify(ctx)
		s.mu.Lock()
		s.flight = nil
		s.mu.Unlock()
		close(f.done)
	} else {
		s.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("verify configuration: %w", ctx.Err())}
		}
	}
	var se *idemstore.StoreError
	if errors.As(f.err, &se) {
		return &idemstore.StoreError{Op: "acquire", Err: se.Err}
	}
	return f.err
}

// verify asks Redis and records the verdict. It returns nil, a
// *idemstore.StoreError of a *configError, or a *idemstore.StoreError of the failure
// to ask (the verdict is then left as it was).
func (s *Store) verify(ctx context.Context) error {
	var mu sync.Mutex // guards problems
	var problems []string
	dur := newDurabilityCheck(s)
	err := s.forEachNode(ctx, func(ctx context.Context, n node, addr string) error {
		p, err := s.checkNode(ctx, n, addr)
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
		if err == nil {
			err = dur.node(ctx, n, addr)
		}
		return err
	})
	if err == nil {
		s.checked(ctx, dur)
		var p string
		if p, err = s.layoutProblem(ctx); p != "" {
			problems = append(problems, p)
		}
	}
	if err != nil && len(problems) == 0 {
		return &idemstore.StoreError{Op: "verify configuration", Err: err}
	}
	var cerr *configError
	if len(problems) > 0 {
		cerr = &configError{msg: strings.Join(problems, "; ")}
	}
	s.setVerdict(cerr)
	if cerr != nil {
		return &idemstore.StoreError{Op: "verify configuration", Err: cerr}
	}
	return nil
}

// setVerdict records a verdict and arms its timer.
func (s *Store) setVerdict(cerr *configError) {
	v := &verdict{err: cerr}
	due := s.checkEvery
	if cerr != nil {
		due = min(due, misconfiguredRecheck)
	}
	s.verdict.Store(v)
	time.AfterFunc(due, func() { v.due.Or(dueCheck) })
	if cerr == nil {
		s.armWatch(v)
	}
}

// armWatch makes the policy of verified verdict v due to be read again in
// policyWatch, unless eviction is accepted (nothing to watch).
func (s *Store) armWatch(v *verdict) {
	if !s.evictionAccepted && policyWatch < s.checkEvery {
		time.AfterFunc(policyWatch, func() { v.due.Or(dueWatch) })
	}
}

// watchPolicy reads the maxmemory-policy of every server of verified
// verdict v (which it holds busy), and returns the misconfiguration, as an
// acquire's error, when one evicts. It keeps the verdict when the policy
// is fine or cannot be read now (the next check says why).
func (s *Store) watchPolicy(ctx context.Context, v *verdict) error {
	var mu sync.Mutex // guards problems
	var problems []string
	_ = s.forEachNode(ctx, func(ctx context.Context, n node, addr string) error {
		if n == nil {
			return nil
		}
		p, err := policyProblem(ctx, n, at(addr))
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
		return err
	})
	if len(problems) > 0 {
		cerr := &configError{msg: strings.Join(problems, "; ")}
		s.setVerdict(cerr)
		return &idemstore.StoreError{Op: "acquire", Err: cerr}
	}
	v.due.And(^uint32(dueWatch))
	v.busy.Store(false)
	s.armWatch(v)
	return nil
}

// at is " on addr", or "" for no address.
func at(addr string) string {
	if addr == "" {
		return ""
	}
	return " on " + addr
}

// denied turns a NOPERM answer, to any call at any time, into the
// misconfiguration it is: the verdict says so until a verification finds
// the scripts allowed again. Other errors come back as the op's store error.
func (s *Store) denied(op string, err error) error {
	if !redis.IsPermissionError(err) {
		return &idemstore.StoreError{Op: op, Err: err}
	}
	cerr := &configError{msg: "Redis denied the store's " + op + " (" + err.Error() + "): " + grantScripts}
	s.setVerdict(cerr)
	return &idemstore.StoreError{Op: op, Err: cerr}
}

// grantScripts says what to change when scripts are denied.
const grantScripts = "grant the store's Redis user EVAL, EVALSHA, SCRIPT LOAD, and GET, SET, PTTL and DEL on its keys " +
	"(ACL SETUSER <user> +eval +evalsha +script|load +get +set +pttl +del +hset +hget +hgetall +pexpire +time +info ~<prefix>:*) and leave scripting enabled"

// node is what checkNode needs of one Redis server; *redis.Client has it.
type node interface {
	redis.Scripter
	ConfigGet(ctx context.Context, parameter string) *redis.MapStringStringCmd
	Info(ctx context.Context, section ...string) *redis.StringCmd
}

// forEachNode calls fn for every server that holds records: every master
// of a Cluster, every shard of a Ring, or the one server of a client. A
// client that is none of these (a wrapper that only runs scripts) is
// checked for scripts only, with a nil node.
func (s *Store) forEachNode(ctx context.Context, fn func(ctx context.Context, n node, addr string) error) error {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n, n.Options().Addr) })
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n, n.Options().Addr) })
	case *redis.Client:
		return fn(ctx, c, c.Options().Addr)
	case node:
		return fn(ctx, c, "")
	}
	return fn(ctx, nil, "")
}

// probe is the script that tells whether EVAL and EVALSHA may run.
var probe = redis.NewScript("return 1")

// checkNode verifies one server: the scripts load and run, and (unless
// eviction is accepted) its maxmemory-policy is noeviction. It returns
// what is wrong there (empty if nothing), or the error that kept it from
// asking.
func (s *Store) checkNode(ctx context.Context, n node, addr string) (string, error) {
	var sc redis.Scripter = n
	if n == nil {
		sc = s.rdb
	}
	where := at(addr)
	scriptsDenied := func(step string, err error) (string, error) {
		if redis.IsPermissionError(err) || strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			return fmt.Sprintf("scripts are denied%s (%s: %v): %s", where, step, err, grantScripts), nil
		}
		return "", fmt.Errorf("%s%s: %w", step, where, err)
	}
	for _, script := range []*redis.Script{s.acquire, s.complete, s.release, s.extend, probe} {
		if err := script.Load(ctx, sc).Err(); err != nil {
			return scriptsDenied("SCRIPT LOAD", err)
		}
	}
	if err := sc.EvalSha(ctx, probe.Hash(), nil).Err(); err != nil {
		return scriptsDenied("EVALSHA", err)
	}
	if err := sc.Eval(ctx, "return 1", nil).Err(); err != nil {
		return scriptsDenied("EVAL", err)
	}
	if s.evictionAccepted || n == nil {
		return "", nil
	}
	return policyProblem(ctx, n, where)
}

// policyProblem reads the maxmemory-policy of n and says what is wrong
// with it ("" if nothing), or returns the error that kept it from asking.
func policyProblem(ctx context.Context, n node, where string) (string, error) {
	policy, err := maxmemoryPolicy(ctx, n)
	switch {
	case err != nil:
		return "", fmt.Errorf("read maxmemory-policy%s: %w", where, err)
	case policy == "" || policy == "noeviction":
		return "", nil
	case strings.HasPrefix(policy, "?"):
		return fmt.Sprintf("maxmemory-policy cannot be read%s (%s): allow the store's Redis user CONFIG GET or INFO, "+
			"or accept eviction with redisstore.WithEvictionRunsMayRepeat()", where, policy[1:]), nil
	}
	return fmt.Sprintf("maxmemory-policy is %s%s, so Redis may evict idempotency records and a retry of an evicted key "+
		"runs its handler again: set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, or your provider's "+
		"parameter), or accept eviction with redisstore.WithEvictionRunsMayRepeat()", policy, where), nil
}

// maxmemoryPolicy reads the server's maxmemory-policy with CONFIG GET, or
// from INFO memory where CONFIG is renamed or denied (managed Redis). It
// returns "" for a server that implements neither (miniredis: no
// maxmemory, no eviction), and "?" followed by the reasons when both were
// denied.
func maxmemoryPolicy(ctx context.Context, n node) (string, error) {
	cfg, cerr := n.ConfigGet(ctx, "maxmemory-policy").Result()
	if cerr == nil {
		if p, ok := cfg["maxmemory-policy"]; ok {
			return p, nil
		}
	}
	info, ierr := n.Info(ctx, "memory").Result()
	if ierr == nil {
		return infoField(info, "maxmemory_policy"), nil
	}
	var rerr redis.Error
	switch {
	case redis.IsPermissionError(ierr):
		return fmt.Sprintf("?CONFIG GET: %v; INFO memory: %v", cerr, ierr), nil
	case errors.As(ierr, &rerr):
		return "", nil // answered, but knows no memory section
	}
	return "", ierr
}

// clientProblem says what is wrong with rdb's options, or "": a client
// without ContextTimeoutEnabled ignores the store timeout on socket I/O.
func clientProblem(rdb redis.Scripter) string {
	var off bool
	switch c := rdb.(type) {
	case *redis.Client:
		off = !c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		off = !c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		off = !c.Options().ContextTimeoutEnabled
	}
	if !off {
		return ""
	}
	return "the go-redis client was built without ContextTimeoutEnabled, so a hung Redis holds every request for the client's " +
		"ReadTimeout and its retries instead of the store timeout: set ContextTimeoutEnabled: true in its options"
}

package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Redis replicates asynchronously: a master answers complete before any
// replica has the record, and a failover in that window undoes an answered
// completion (the promoted replica never saw it, and the retry runs the
// handler again). So a completion is followed by WAIT numreplicas timeout,
// on the connection that ran the script and pipelined with it: WAIT
// answers once that many replicas have acknowledged every write of that
// connection, or when the timeout passes, with the number that did. A first
// request still costs two round trips. When too few acknowledge, Complete
// returns an error matching idemstore.ErrUnreplicated and the engine answers the
// result marked Idempotency-Degraded. A step's journal entry (steps.go) is
// acknowledged the same way, in the same batches.
//
// What a WAIT costs is mostly wake-ups: it answers only once the replica
// has read the stream and acknowledged, so each one wakes the master, the
// replica and this process once more than an unacknowledged write does.
// Fewer WAITs per completion is what makes it cheaper, and the lane's batch
// is what keeps them few (one per 12-15 completions at 32 senders). The
// scripts and the WAIT of a batch share one connection rather than the
// scripts going out with the plain calls and a dedicated connection
// writing a marker and WAITing after it (a WAIT after any write covers
// every earlier write of the master): measured, that marker path sent more
// WAITs per completion (its rounds are shorter, so more of them), added a
// round trip per completion and doubled the master's and the replica's CPU
// per first request. The acknowledged batches have a lane of their own
// rather than joining the acquires' batches, which would hold every
// acquire until the replica answers (and, measured, sent more WAITs for the
// same CPU); and one such batch is on the wire at a time, as a second sent
// more WAITs and was no faster (BENCHMARKS.md, "Redis with a replica
// acknowledging").

// DefaultReplicaAckTimeout is how long a completion waits for its replicas'
// acknowledgement by default (WithReplicaAcks).
const DefaultReplicaAckTimeout = 200 * time.Millisecond

// WithReplicaAcks sets how many replicas must acknowledge a completion
// before the client is answered, and how long to wait for them (timeout <=
// 0 means [DefaultReplicaAckTimeout]). A completion that is not
// acknowledged in time is still stored, and its client gets the result
// marked Idempotency-Degraded: true ([idemstore.ErrUnreplicated]). n = 0 turns
// the acknowledgement off: a failover may then undo answered completions.
// The same applies to a step's journal entry (idem.Step): one that is not
// acknowledged in time is journaled on the master, and Step returns an
// error matching ErrUnreplicated.
//
// The default waits for one replica whenever the master holding the key has
// replicas or has had them (read at each check, see [WithCheckInterval]:
// connected replicas, or a replication backlog, which the master keeps for
// repl-backlog-ttl after its last replica left, or, in a Cluster, a replica
// the Cluster lists as the master's, connected or not, or, on a master a
// Sentinel watches, a replica that Sentinel lists, connected or not), and
// for none on a master that never had one. A replica whose link dropped is
// thus still waited for, and the completions are answered degraded until
// it, or another replica, acknowledges again: it is the one a failover
// would promote. A master that restarts meanwhile forgets its backlog; the
// store that saw its replicas goes on waiting for it (until a replica
// acknowledges, or the process restarts), and a store started since still
// waits for it as long as the Cluster, or Sentinel, lists the replica.
// Sentinel is found through the master, with no option: on a master with
// no replica connected and no backlog, each check asks whether a Sentinel
// watches it (PUBSUB NUMSUB __sentinel__:hello; a go-redis FailoverClient
// counts as watched), reads that Sentinel's address and the master's name
// from the hello message it publishes there every two seconds, in the
// background, and asks it (SENTINEL REPLICAS, without a password); until
// it answers, the completions there wait for one replica. Once the
// replicas are gone for good, the operator ends the wait on the server
// (CONFIG SET repl-backlog-ttl 1: the master frees its backlog within
// seconds; in a Cluster, also CLUSTER FORGET of the replica on every node,
// as redis-cli --cluster del-node does; under Sentinel, also SENTINEL RESET
// of the master on every Sentinel) or with WithReplicaAcks(0, 0).
// With a Cluster the wait goes to the master of the key's slot; a client
// that is not a go-redis Client, ClusterClient or Ring (a wrapper that only
// runs scripts) cannot wait, and its completions are not acknowledged.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(s *Store) {
		s.acks.fixed = max(n, 0)
		if timeout > 0 {
			s.acks.timeout = timeout
		}
	}
}

// replicaAcks is the store's acknowledgement policy and what it knows of
// its masters' replicas.
type replicaAcks struct {
	fixed   int           // replicas to wait for (WithReplicaAcks); -1: one where the master has replicas
	timeout time.Duration // how long WAIT waits

	// seen is what the last check read of each master's replicas. A
	// master that is not in it (a Cluster's newly promoted one) is waited
	// for, and makes the store check again.
	seen atomic.Pointer[replicaView]

	sentinels sentinels // the Sentinels that watch masters without a record of replicas (sentinel.go)
}

// replicaView is what one check read of every master's replicas.
type replicaView struct {
	at       time.Time
	replicas map[string]int // by node address (node.Options().Addr): replicas to wait for (replicasToWaitFor)
}

// recheckAfter bounds how often an unknown master or an unacknowledged
// completion makes the store check its masters again.
const recheckAfter = time.Second

// want is how many replicas a completion on the master at addr waits for.
func (s *Store) want(addr string) int {
	if s.acks.fixed >= 0 {
		return s.acks.fixed
	}
	v := s.acks.seen.Load()
	if v == nil {
		return 0 // never checked: the first acquire checks before any completion
	}
	n, ok := v.replicas[addr]
	if !ok {
		s.recheck(v)
		return 1
	}
	return min(n, 1)
}

// recheck makes the next acquire check the server again in the background,
// unless the view is fresh.
func (s *Store) recheck(v *replicaView) {
	if v != nil && time.Since(v.at) < recheckAfter {
		return
	}
	if vd := s.verdict.Load(); vd != nil {
		vd.due.Or(dueCheck)
	}
}

// ackNode is the client of the master that holds key, and its address, for
// a completion that waits for replicas; nil when the client cannot tell it.
func (s *Store) ackNode(ctx context.Context, key string) (*redis.Client, string, error) {
	var c *redis.Client
	var err error
	switch r := s.rdb.(type) {
	case *redis.Client:
		c = r
	case *redis.ClusterClient:
		c, err = r.MasterForKey(ctx, key)
	case *redis.Ring:
		c, err = r.GetShardClientForKey(key)
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return c, c.Options().Addr, nil
}

// ackTarget is the master that holds skey (node, at addr) and how many of
// its replicas a write there waits for (n); node is nil when the client
// cannot tell it or the acknowledgement is off.
func (s *Store) ackTarget(ctx context.Context, skey string) (node *redis.Client, addr string, n int, err error) {
	if s.acks.fixed == 0 {
		return nil, "", 0, nil
	}
	if node, addr, err = s.ackNode(ctx, skey); err != nil || node == nil {
		return nil, "", 0, err
	}
	return node, addr, s.want(addr), nil
}

// completeAcked runs complete.lua for the record at skey and, when the
// master has replicas to wait for, WAIT after it on the same connection, in
// the lane of that master's acknowledged writes (batch.go): one WAIT after
// a batch's scripts acknowledges all of them. When the store knows of no
// replica to wait for, it counts the master's replicas as the completion
// leaves them (completeCounted), so that a replica that attached since the
// last check is not missed (see sawReplicas).
func (s *Store) completeAcked(ctx context.Context, skey, token string, tag byte, result []byte, retention int64) error {
	node, addr, n, err := s.ackTarget(ctx, skey)
	if err != nil {
		return s.ackFailed("complete", err)
	}
	if n == 0 {
		var stored int64
		var err error
		if node != nil && s.acks.fixed < 0 { // the default: no replica known, so count them
			stored, err = s.completeCounted(ctx, skey, token, tag, result, retention)
		} else {
			stored, err = s.script(ctx, s.complete, skey, token, result, retention, countNone, tagArgs[tag]).Int64()
		}
		switch {
		case err != nil:
			return s.denied("complete", err)
		case stored == 0:
			return idemstore.ErrNotOwner
		case stored < 0:
			return &idemstore.StoreError{Op: "complete", Err: fmt.Errorf("malformed reply %d", stored)}
		case stored > 1:
			s.sawReplicas(addr, int(stored-1))
			return &unreplicatedError{op: "complete", want: 1, unannounced: int(stored - 1)}
		}
		return nil
	}
	return s.waited(ctx, "complete", node, n, s.complete, lua.Complete, []string{skey}, token, result, retention, countNone, tagArgs[tag])
}

// waited runs script (src its source) on keys with ARGV args, an
// owner-only script that answers 1 (done) or 0 (refused), and WAIT n after
// it on the same connection, in the lane of node's acknowledged writes
// (batch.go); op names the call in its errors. It returns nil once n
// replicas acknowledged the write, an error matching
// idemstore.ErrUnreplicated when too few did in time (the write is on the
// master all the same).
func (s *Store) waited(ctx context.Context, op string, node *redis.Client, n int, script *redis.Script, src string, keys []string, args ...any) error {
	timeout := s.acks.timeout
	if d, ok := ctx.Deadline(); ok {
		// WAIT must answer before the call's deadline, or a stored result
		// would look like a failed call.
		timeout = min(timeout, time.Until(d)/2)
	}
	ms := max(timeout.Milliseconds(), 1)
	l := s.lanes.ackedLane(node)
	cmd, wait := scriptWait(ctx, l, evalshaKeys(ctx, script, keys, args...), n, ms)
	if noScript(cmd.Err()) {
		eval := append(append(make([]any, 0, 3+len(keys)+len(args)), "eval", src, len(keys)), stringArgs(keys)...)
		cmd, wait = scriptWait(ctx, l, redis.NewCmd(ctx, append(eval, args...)...), n, ms)
	}
	done, err := cmd.Int64()
	switch {
	case err != nil:
		return s.ackFailed(op, s.denied(op, err))
	case done == 0:
		return idemstore.ErrNotOwner
	case done != 1:
		return &idemstore.StoreError{Op: op, Err: fmt.Errorf("malformed reply %d", done)}
	}
	acked, err := wait.Result()
	if err == nil && acked >= int64(n) {
		return nil
	}
	s.recheck(s.acks.seen.Load()) // a replica may have left: read again how many there are
	return &unreplicatedError{op: op, want: n, acked: acked, timeout: time.Duration(ms) * time.Millisecond, err: err}
}

// stringArgs is keys as command arguments.
func stringArgs(keys []string) []any {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	return args
}

// completeCounted runs complete.lua for the record at skey and counts the
// master's connected replicas as the completion left it. It answers as
// the script does with countReplicas: 0 refused, else 1 + the replicas.
// In a lane on one server's client the count is one INFO replication after
// the batch's scripts, on their connection, for all the batch's
// completions (about 3 µs of Redis CPU a completion less than INFO inside
// each script); a replica that attaches between a
// script and that INFO is counted, one that leaves is not, as one that
// left just before the script. Elsewhere (a ClusterClient's or a Ring's
// lanes, whose pipelines route by key) the script counts them itself.
func (s *Store) completeCounted(ctx context.Context, skey, token string, tag byte, result []byte, retention int64) (int64, error) {
	// Only a store on one server's client has a direct lane, its plain one
	// (lanes.of returns it for every key): a Cluster's or a Ring's lanes
	// pipe through a client that routes by key.
	l := s.lanes.plain
	if l == nil || !l.direct {
		return s.script(ctx, s.complete, skey, token, result, retention, countReplicas, tagArgs[tag]).Int64()
	}
	cmd := evalsha(ctx, s.complete, skey, token, result, retention, countNone, tagArgs[tag])
	c := newCall(ctx, cmd)
	c.count = true
	l.do(c)
	replicas := c.replicas
	c.free()
	stored, err := cmd.Int64()
	switch {
	case noScript(err): // the script counts them, as EVAL loads it
		return s.complete.Eval(ctx, s.rdb, []string{skey}, token, result, retention, countReplicas, tagArgs[tag]).Int64()
	case err != nil || stored != 1:
		return stored, err
	}
	return 1 + int64(replicas), nil
}

// countReplicas is complete.lua's ARGV[4] that has it count the master's
// replicas.
const countReplicas = "r"

// countNone is complete.lua's ARGV[4] that counts no replicas, before its
// ARGV[5] (the record's tag).
const countNone = ""

// scriptWait sends script and WAIT n ms after it, in lane l, on one
// connection; wait holds WAIT's reply (shared by the batch's calls).
func scriptWait(ctx context.Context, l *lane, script *redis.Cmd, n int, ms int64) (*redis.Cmd, *redis.IntCmd) {
	c := newCall(ctx, script)
	c.wait, c.waitMS = n, ms
	l.do(c)
	wait := c.acked
	c.free()
	if wait == nil { // withdrawn before its batch: script holds the context's error
		wait = redis.NewIntCmd(ctx, "wait", n, ms)
		wait.SetErr(script.Err())
	}
	return script, wait
}

// sawReplicas records that the master at addr had n replicas when a
// completion that waited for none was written: the completions after it
// wait for them, without waiting for the next check.
func (s *Store) sawReplicas(addr string, n int) {
	for {
		v := s.acks.seen.Load()
		next := &replicaView{replicas: map[string]int{addr: n}}
		if v != nil {
			if v.replicas[addr] == n {
				return
			}
			next.at = v.at
			for a, k := range v.replicas {
				if a != addr {
					next.replicas[a] = k
				}
			}
		}
		if s.acks.seen.CompareAndSwap(v, next) {
			return
		}
	}
}

// ackFailed is an acknowledged write's failure to reach the key's master
// (op: "complete" or "step"). A ClusterClient reloads its slot map, so
// that the engine's next attempt goes to the slot's new master.
func (s *Store) ackFailed(op string, err error) error {
	if c, ok := s.rdb.(*redis.ClusterClient); ok {
		c.ReloadState(context.Background())
	}
	if _, ok := err.(*idemstore.StoreError); ok {
		return err
	}
	return &idemstore.StoreError{Op: op, Err: err}
}

// unreplicatedError is a completion or a step stored on the master that
// too few replicas acknowledged in time.
type unreplicatedError struct {
	op          string // "complete" or "step"
	want        int
	acked       int64
	timeout     time.Duration
	err         error // WAIT's own failure, if it failed
	unannounced int   // replicas attached since the last check, not waited for
}

func (e *unreplicatedError) Error() string {
	what := "result"
	if e.op == "step" {
		what = "step journaled"
	}
	if e.unannounced > 0 {
		return fmt.Sprintf("idem: %s stored while %d replica(s) the store had not yet counted were attached; it did not wait for them", what, e.unannounced)
	}
	if e.err != nil {
		return fmt.Sprintf("idem: %s stored, but WAIT %d failed: %v", what, e.want, e.err)
	}
	return fmt.Sprintf("idem: %s stored, but %d of %d replicas acknowledged it within %v", what, e.acked, e.want, e.timeout)
}

// Is makes errors.Is(err, idemstore.ErrUnreplicated) true.
func (e *unreplicatedError) Is(target error) bool { return target == idemstore.ErrUnreplicated }

// Unwrap returns WAIT's failure, if any.
func (e *unreplicatedError) Unwrap() error { return e.err }

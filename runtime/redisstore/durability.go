package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every check also reads, on every master, how many replicas it has (for
// the completions' WAIT, replica.go) and whether it keeps records on disk.
// A master with neither an append-only file nor RDB snapshots nor a replica
// loses every record when it restarts, and every retry after that runs its
// handler again. The store works on it (development servers often run like
// that), but says so: a log line when the warning appears or changes, and
// the WithWarnings function at every check that finds it.

// WithWarnings sets a function the store calls, at every check (see
// [WithCheckInterval]) that finds one, with what in the server's
// configuration it works on but that weakens the promise, and what to set
// instead: a master that keeps records in memory only (no append-only
// file, no RDB snapshots, no replica). The store also logs each new
// warning once, with its logger ([WithLogger]).
func WithWarnings(fn func(ctx context.Context, warning string)) Option {
	return func(s *Store) { s.durability.warn = fn }
}

// durability is the store's warning function and the warning it logged
// last.
type durability struct {
	warn   func(ctx context.Context, warning string)
	logged atomic.Pointer[string]
}

// durabilityCheck collects, during one verification, what every master
// says of its replicas and persistence. It is safe for concurrent use.
type durabilityCheck struct {
	mu       sync.Mutex     // guards the fields below
	replicas map[string]int // by node address: replicas to wait for (replicasToWaitFor)
	// unrecorded holds the addresses of masters that keep no record of
	// replicas: none connected, no backlog, no replication offset. Such a
	// master never had a replica, or restarted since (a restart forgets the
	// backlog, and a replica whose link is down does not come back to
	// remind it): one the store saw with replicas is still waited for.
	unrecorded map[string]bool
	volatile   []string // addresses of masters that keep records in memory only
	cluster    bool     // the masters are a Cluster's, which lists each master's replicas
	store      *Store   // the store, which asks the masters' Sentinels (sentinel.go)
}

// newDurabilityCheck returns the check of the masters of s's client.
func newDurabilityCheck(s *Store) *durabilityCheck {
	_, cluster := s.rdb.(*redis.ClusterClient)
	return &durabilityCheck{replicas: map[string]int{}, unrecorded: map[string]bool{}, cluster: cluster, store: s}
}

// node reads one master's replicas and persistence. A server that does not
// answer INFO replication (miniredis), or denies it, counts as one without
// replicas; persistence that cannot be read is not warned about.
func (d *durabilityCheck) node(ctx context.Context, n node, addr string) error {
	if n == nil {
		return nil
	}
	repl, err := n.Info(ctx, "replication").Result()
	if err != nil && answered(err) != nil {
		return err
	}
	replicas, _ := strconv.Atoi(infoField(repl, "connected_slaves"))
	master := infoField(repl, "role") == "master" // not when INFO went unanswered: repl is empty
	wait := replicasToWaitFor(repl, replicas)
	decided := false // a Sentinel said whether the master has a replica
	switch {
	case wait > 0 || !master:
	case d.cluster:
		if wait, err = listedReplicas(ctx, n); err != nil {
			return err
		}
	default:
		if wait, decided, err = d.store.sentinelListed(ctx, n, addr); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.replicas[addr] = wait
	if wait == 0 && !decided && master && infoField(repl, "master_repl_offset") == "0" {
		d.unrecorded[addr] = true
	}
	d.mu.Unlock()
	if replicas > 0 || !master {
		return nil // replicated, or a replica itself, or nothing known
	}
	pers, err := n.Info(ctx, "persistence").Result()
	if err != nil || infoField(pers, "aof_enabled") != "0" {
		return answered(err)
	}
	cfg, err := n.ConfigGet(ctx, "save").Result()
	if save, ok := cfg["save"]; err != nil || !ok || strings.TrimSpace(save) != "" {
		return answered(err)
	}
	d.mu.Lock()
	d.volatile = append(d.volatile, addr)
	d.mu.Unlock()
	return nil
}

// replicasToWaitFor is how many replicas a completion on a master whose
// INFO replication is repl, with connected replicas, waits for: those
// connected, or one when none is but the master has had replicas. A
// replica whose link dropped (a password rotation that missed it, a
// restart with a stale configuration, a network flap long enough to close
// the connection) is not counted as connected, yet it is the one a
// failover promotes: the master's own record of having had replicas is its
// replication backlog, which it creates when the first replica attaches and
// frees only once none has been connected for repl-backlog-ttl (an hour by
// default; 0 keeps it for good). A promoted replica keeps the backlog it
// had as a replica.
func replicasToWaitFor(repl string, connected int) int {
	if connected == 0 && infoField(repl, "role") == "master" && infoField(repl, "repl_backlog_active") == "1" {
		return 1
	}
	return connected
}

// listedReplicas is 1 when the Cluster lists a replica of the master n
// (CLUSTER NODES), connected or not, else 0. A master that restarted while
// its replica's link was down has neither the replica connected nor a
// backlog, but the Cluster still counts the replica as the master's, and
// promotes it if the master fails: a store that starts then, and never saw
// the replica, waits for it all the same. The Cluster lists the replica
// until every node forgets it (CLUSTER FORGET).
func listedReplicas(ctx context.Context, n node) (int, error) {
	c, ok := n.(interface {
		ClusterNodes(ctx context.Context) *redis.StringCmd
	})
	if !ok {
		return 0, nil
	}
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return 0, answered(err)
	}
	// A line is: id addr flags master-id ...; myself's flags say "myself".
	var me string
	lines := strings.Split(nodes, "\n")
	for _, line := range lines {
		if f := strings.Fields(line); len(f) > 3 && slices.Contains(strings.Split(f[2], ","), "myself") {
			me = f[0]
		}
	}
	for _, line := range lines {
		if f := strings.Fields(line); me != "" && len(f) > 3 && f[3] == me {
			return 1, nil
		}
	}
	return 0, nil
}

// answered is nil for an error Redis answered (an unknown command, a
// denied one): what it would have said is not known, and not needed.
func answered(err error) error {
	var rerr redis.Error
	if err == nil || errors.As(err, &rerr) {
		return nil
	}
	return err
}

// infoField is the value of field in an INFO reply, or "".
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// checked keeps what a verification read: the masters' replicas for the
// completions, and the warning, which it logs when new and reports.
func (s *Store) checked(ctx context.Context, d *durabilityCheck) {
	if prev := s.acks.seen.Load(); prev != nil {
		for addr := range d.unrecorded {
			if prev.replicas[addr] > 0 {
				d.replicas[addr] = 1 // restarted without its record: the replica that dropped is still there
			}
		}
	}
	s.acks.seen.Store(&replicaView{at: time.Now(), replicas: d.replicas})
	warning := ""
	if len(d.volatile) > 0 {
		where := ""
		if d.volatile[0] != "" {
			where = " on " + strings.Join(d.volatile, ", ")
		}
		warning = fmt.Sprintf("Redis keeps idempotency records in memory only%s (no append-only file, no RDB snapshots, "+
			"no replica): a restart loses every record, and a retry of a request answered before it runs its handler "+
			"again; set appendonly yes (appendfsync everysec or always), or save rules, or add a replica", where)
	}
	if prev := s.durability.logged.Swap(&warning); (prev == nil || *prev != warning) && warning != "" {
		s.log.Warn("redisstore: " + warning)
	}
	if warning != "" && s.durability.warn != nil {
		s.durability.warn(ctx, warning)
	}
}

package redisstore

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A master that restarted while its replica's link was down keeps no
// record of that replica: none connected, no backlog. When Sentinel
// watches it, Sentinel still lists the replica (until SENTINEL RESET) and
// promotes it if the master fails. So on a master with neither, each check
// asks whether a Sentinel watches it: every Sentinel subscribes to the
// master's __sentinel__:hello channel (PUBSUB NUMSUB says how many), and
// publishes there, every two seconds, its own address and the master's
// name (go-redis's FailoverClient counts as watched whatever PUBSUB NUMSUB
// says: a Sentinel named the master). The store reads one such message, in the background, and asks that
// Sentinel for the master's replicas (SENTINEL REPLICAS); later checks ask
// that Sentinel again, and find another only when it stops answering. The
// store needs nothing from the client for it: go-redis's FailoverClient
// keeps its Sentinels' addresses and the master's name to itself, and a
// plain client of a master behind an address that follows the promotion
// has none. Until the Sentinel answers, the completions on that master
// wait for one replica, as for a master that has had one.

// sentinelHello is the channel on which each Sentinel that watches a
// server publishes, every two seconds, its address and the name of the
// master it watches.
const sentinelHello = "__sentinel__:hello"

// sentinelSearch bounds the search for a master's Sentinel: two periods of
// its hello messages, and the question to the Sentinel.
const sentinelSearch = 5 * time.Second

// sentinels is what the store learned of the Sentinels that watch its
// masters. It is safe for concurrent use.
type sentinels struct {
	mu sync.Mutex                // guards of
	of map[string]*sentinelFound // by master address: its Sentinel, or the search for it
}

// sentinelFound is the search for one master's Sentinel. Its fields other
// than done are written before done is closed, and read after.
type sentinelFound struct {
	done chan struct{} // closed when the search ended
	at   time.Time     // when the search ended
	addr string        // a Sentinel that answered for the master; "" if none did
	name string        // the master's name there
}

// watched is what the search needs of a master's client; *redis.Client
// has it.
type watched interface {
	PubSubNumSub(ctx context.Context, channels ...string) *redis.MapStringIntCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// sentinelListed is how many replicas a completion on the master n, at
// addr, which keeps no record of a replica, waits for by what Sentinel
// says: 1 when a Sentinel that watches it lists a replica of it, connected
// or not; 0 when one lists none (decided), or when no Sentinel watches it;
// 1 while the store is still finding the Sentinel, or could not ask one
// (then again after a check interval). A server that does not answer
// PUBSUB NUMSUB, or denies it, counts as one no Sentinel watches.
func (s *Store) sentinelListed(ctx context.Context, n node, addr string) (wait int, decided bool, err error) {
	w, ok := n.(watched)
	if !ok {
		return 0, false, nil
	}
	s.acks.sentinels.mu.Lock()
	f := s.acks.sentinels.of[addr]
	s.acks.sentinels.mu.Unlock()
	if f != nil {
		select {
		case <-f.done:
		default:
			return 1, false, nil // still finding it
		}
		if f.addr != "" {
			if wait, err := askSentinel(ctx, n, f.addr, f.name); err == nil {
				return wait, true, nil
			}
			// That Sentinel went away or forgot the master: find another.
		} else if time.Since(f.at) < s.checkEvery {
			return 1, false, nil // none answered lately
		}
	}
	subs, err := w.PubSubNumSub(ctx, sentinelHello).Result()
	if (err != nil || subs[sentinelHello] == 0) && !sentinelClient(n) {
		s.acks.sentinels.forget(addr, f)
		return 0, false, answered(err)
	}
	if f, started := s.acks.sentinels.search(addr, f); started {
		go s.findSentinel(w, n, addr, f)
	}
	return 1, false, nil
}

// search starts a search for the Sentinel of the master at addr, in place
// of prev, unless another check started one since.
func (ss *sentinels) search(addr string, prev *sentinelFound) (f *sentinelFound, started bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if cur := ss.of[addr]; cur != prev {
		return cur, false
	}
	if ss.of == nil {
		ss.of = map[string]*sentinelFound{}
	}
	f = &sentinelFound{done: make(chan struct{})}
	ss.of[addr] = f
	return f, true
}

// forget drops f, what the store knew of the Sentinel of the master at
// addr, which no Sentinel watches now.
func (ss *sentinels) forget(addr string, f *sentinelFound) {
	ss.mu.Lock()
	if f != nil && ss.of[addr] == f {
		delete(ss.of, addr)
	}
	ss.mu.Unlock()
}

// await waits until no search for a Sentinel runs, and reports whether
// one ran; it reports false when ctx ends first.
func (ss *sentinels) await(ctx context.Context) bool {
	ss.mu.Lock()
	var running []chan struct{}
	for _, f := range ss.of {
		select {
		case <-f.done:
		default:
			running = append(running, f.done)
		}
	}
	ss.mu.Unlock()
	for _, done := range running {
		select {
		case <-done:
		case <-ctx.Done():
			return false // nothing new to verify with, nor a context to verify on
		}
	}
	return len(running) > 0
}

// findSentinel searches for a Sentinel of the master n (w, at addr):
// it reads the master's hello messages until a Sentinel they name answers
// for the master, records it in f, and has the completions on the master
// wait for what it says.
func (s *Store) findSentinel(w watched, n node, addr string, f *sentinelFound) {
	ctx, cancel := context.WithTimeout(context.Background(), sentinelSearch)
	defer cancel()
	ps := w.Subscribe(ctx, sentinelHello)
	defer ps.Close()
	var err, askErr error // why the search ended; why the last Sentinel asked did not answer
	for {
		var msg *redis.Message
		if msg, err = ps.ReceiveMessage(ctx); err != nil {
			break
		}
		// ip,port,runid,epoch,master_name,master_ip,master_port,master_epoch
		hello := strings.Split(msg.Payload, ",")
		if len(hello) < 8 {
			continue
		}
		sentinel, name := net.JoinHostPort(hello[0], hello[1]), hello[4]
		wait, aerr := askSentinel(ctx, n, sentinel, name)
		if aerr != nil {
			askErr = aerr
			continue
		}
		f.addr, f.name = sentinel, name
		close(f.done)
		s.sawReplicas(addr, wait)
		s.recheck(nil)
		return
	}
	if askErr != nil {
		err = askErr
	}
	f.at = time.Now()
	close(f.done)
	s.log.Warn(fmt.Sprintf("redisstore: Sentinels watch the master%s, but the store could not ask one of them for its replicas (%v): "+
		"its completions wait for one replica, and are answered degraded while none acknowledges; "+
		"let the store's process reach the Sentinels, without a password, at the addresses they announce (sentinel announce-ip, announce-port)", at(addr), err))
}

// sentinelClient reports whether n is go-redis's FailoverClient, which
// a Sentinel pointed at the master: it is watched even while PUBSUB NUMSUB
// counts no Sentinel, as in the second after the master restarted, before
// its Sentinels connect again.
func sentinelClient(n node) bool {
	c, ok := n.(*redis.Client)
	return ok && c.Options().Addr == "FailoverClient" // the address go-redis gives it
}

// askSentinel is 1 when the Sentinel at addr lists a replica of the master
// it calls name, connected or not, else 0. It connects as the client of the
// master n does, with TLS when that does (as go-redis's FailoverClient
// reaches its Sentinels).
func askSentinel(ctx context.Context, n node, addr, name string) (int, error) {
	opt := &redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true}
	if c, ok := n.(*redis.Client); ok {
		opt.TLSConfig = c.Options().TLSConfig
		opt.DialTimeout = c.Options().DialTimeout
	}
	sc := redis.NewSentinelClient(opt)
	defer sc.Close()
	replicas, err := sc.Replicas(ctx, name).Result()
	if err != nil {
		return 0, fmt.Errorf("SENTINEL REPLICAS %s on %s: %w", name, addr, err)
	}
	return min(len(replicas), 1), nil
}

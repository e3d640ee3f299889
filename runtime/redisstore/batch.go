package redisstore

import (
	"context"
	"runtime"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Under load the cost of a first request is system calls, not Redis: each
// store call writes its commands and reads their replies on a connection of
// its own. A lane sends the commands of concurrent calls together instead,
// as one pipeline on one connection: a call that finds its lane idle sends
// its own commands at once (a lone request waits for nothing and costs the
// round trips it always did), and the calls that arrive while that
// pipeline is on the wire queue up, to be sent together as the next one
// when it returns. One pipeline per lane is on the wire at a time.
//
// go-redis's AutoPipeliner (v9.22, experimental) batches alike, but it
// cannot carry what the store sends: a WAIT or an INFO goes to a connection
// of its own (where it counts none of the completion's writes, or another
// moment's replicas), a pipeline (acquire's SET NX and GET before Redis 7.0)
// is not merged, and a queued command no longer honours its context's
// deadline (BENCHMARKS.md compares it with the lanes).

// lane batches the pipelines of concurrent store calls on one client.
type lane struct {
	pipe pipeliner // the client whose pipelines carry the batches
	// direct is true when pipe is one server's client (a *redis.Client):
	// a command without a key, as INFO, goes to the server that runs the
	// lane's other commands.
	direct bool

	mu    sync.Mutex // guards busy and queue
	busy  bool       // a batch is on the wire
	queue []*call    // calls waiting for the next batch, in arrival order
}

// call is one store call's commands in a lane.
type call struct {
	ctx  context.Context
	cmds []redis.Cmder
	// wait, when > 0, asks for WAIT wait waitMS after the batch's
	// commands (replica.go), on the same connection; acked is its reply.
	wait   int
	waitMS int64
	acked  *redis.IntCmd
	// count, in a direct lane, asks for the server's connected replicas as
	// the batch's commands left it: one INFO replication after them, on
	// the same connection, counts for all the batch's calls that ask.
	// replicas is its count; 0 when INFO failed (a user denied it counts
	// none, as the store's checks do).
	count    bool
	replicas int

	ready chan struct{} // sent once the commands ran, or to hand the call the next batch
	batch []*call       // the batch the call is handed to send, itself first
	buf   [3]redis.Cmder
	self  [1]*call // the batch of a call sent alone
}

var callPool = sync.Pool{New: func() any { return &call{ready: make(chan struct{}, 1)} }}

// newCall returns a call of cmds on ctx, from a pool: give it back with
// free once its replies are read.
func newCall(ctx context.Context, cmds ...redis.Cmder) *call {
	c := callPool.Get().(*call)
	c.ctx = ctx
	c.cmds = append(c.buf[:0], cmds...)
	return c
}

// free returns c to the pool.
func (c *call) free() {
	*c = call{ready: c.ready}
	callPool.Put(c)
}

// do sends c's commands, alone or in a batch with other calls', and returns
// when their replies (or errors) are in the commands. A call that is still
// queued when its context ends leaves the queue with the context's error
// in its commands; once its batch is under way it waits for the replies.
func (l *lane) do(c *call) {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		c.self[0] = c
		l.send(l.gather(c.self[:]))
		c.self[0] = nil
		return
	}
	l.queue = append(l.queue, c)
	l.mu.Unlock()
	select {
	case <-c.ready:
	case <-c.ctx.Done():
		if l.withdraw(c) {
			for _, cmd := range c.cmds {
				cmd.SetErr(c.ctx.Err())
			}
			return
		}
		<-c.ready
	}
	if c.batch != nil { // handed the next batch: c sends it
		l.send(l.gather(c.batch))
	}
}

// gather returns batch with the calls that queue while the goroutines
// ready to run take their turn first (runtime.Gosched): under load, the
// requests a batch just answered make their next store calls then, and
// join this batch instead of waiting a round trip for the next (0.17 ->
// 0.12 round trips per first request at 32 connections, BENCHMARKS.md
// "Redis"). With no
// other goroutine ready, as for a lone request, it returns at once.
func (l *lane) gather(batch []*call) []*call {
	runtime.Gosched()
	l.mu.Lock()
	if len(l.queue) > 0 {
		batch = append(batch, l.queue...)
		l.queue = nil
	}
	l.mu.Unlock()
	return batch
}

// withdraw takes c out of the queue; false when a batch already holds it.
func (l *lane) withdraw(c *call) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.queue {
		if q == c {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			return true
		}
	}
	return false
}

// send sends batch as one pipeline, hands the calls queued meanwhile to
// the first of them, and wakes batch's other calls. It runs on the
// goroutine of batch[0].
func (l *lane) send(batch []*call) {
	pipe := l.pipe.Pipeline()
	ctx := batch[0].ctx
	wait, waitMS, count := 0, int64(0), false
	for _, c := range batch {
		for _, cmd := range c.cmds {
			_ = pipe.Process(ctx, cmd)
		}
		if c.wait > 0 {
			wait = max(wait, c.wait)
			waitMS = minPositive(waitMS, c.waitMS)
		}
		count = count || c.count
		ctx = later(ctx, c.ctx)
	}
	var info *redis.StringCmd
	if count {
		info = redis.NewStringCmd(ctx, "info", "replication")
		_ = pipe.Process(ctx, info)
	}
	var acked *redis.IntCmd
	if wait > 0 {
		acked = redis.NewIntCmd(ctx, "wait", wait, waitMS)
		_ = pipe.Process(ctx, acked)
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error

	l.mu.Lock()
	next := l.queue
	l.queue = nil
	if len(next) == 0 {
		l.busy = false
	}
	l.mu.Unlock()
	if len(next) > 0 {
		next[0].batch = next
		next[0].ready <- struct{}{}
	}
	replicas := 0
	if info != nil {
		replicas, _ = strconv.Atoi(infoField(info.Val(), "connected_slaves"))
	}
	for _, c := range batch {
		c.acked, c.replicas = acked, replicas
	}
	for _, c := range batch[1:] {
		c.batch = nil
		c.ready <- struct{}{}
	}
	batch[0].batch = nil
}

// later returns whichever of a and b ends later: a batch runs until the
// last of its calls' deadlines, so that none of them is cut short by
// another's. A context without a deadline ends latest.
func later(a, b context.Context) context.Context {
	da, ok := a.Deadline()
	if !ok {
		return a
	}
	if db, ok := b.Deadline(); !ok || db.After(da) {
		return b
	}
	return a
}

// minPositive is the smaller of a and b, ignoring a zero a.
func minPositive(a, b int64) int64 {
	if a == 0 || b < a {
		return b
	}
	return a
}

// lanes are a store's lanes: for the calls that wait for no replica, one
// per master (a ClusterClient's or a Ring's: a master that hangs holds up
// only its own keys' calls) on the store's client, which routes them; and
// one per master for the completions and steps that wait (replica.go), so
// that acquires never queue behind a WAIT.
type lanes struct {
	plain  *lane    // on the store's client; nil if it cannot pipeline
	shards sync.Map // *redis.Client (a Cluster master, a Ring shard) -> *lane on the store's client
	acked  sync.Map // *redis.Client (a master) -> *lane on that master
}

// of returns the lane of the calls on key that wait for no replica.
func (ls *lanes) of(ctx context.Context, rdb any, key string) *lane {
	var node *redis.Client
	var err error
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		node, err = r.MasterForKey(ctx, key)
	case *redis.Ring:
		node, err = r.GetShardClientForKey(key)
	default:
		return ls.plain
	}
	if err != nil { // no slot map yet: the client's pipeline finds out
		return ls.plain
	}
	if l, ok := ls.shards.Load(node); ok {
		return l.(*lane)
	}
	l, _ := ls.shards.LoadOrStore(node, newLane(ls.plain.pipe))
	return l.(*lane)
}

// ackedLane returns the lane of the completions and steps that wait for node's replicas.
func (ls *lanes) ackedLane(node *redis.Client) *lane {
	if l, ok := ls.acked.Load(node); ok {
		return l.(*lane)
	}
	l, _ := ls.acked.LoadOrStore(node, newLane(node))
	return l.(*lane)
}

// newLane returns a lane whose batches pipe carries.
func newLane(pipe pipeliner) *lane {
	_, direct := pipe.(*redis.Client)
	return &lane{pipe: pipe, direct: direct}
}

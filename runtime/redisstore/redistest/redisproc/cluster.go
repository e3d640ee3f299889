package redisproc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of Redis Cluster.
const clusterSlots = 16384

// Cluster is a Redis Cluster, each node a [Server] child process on
// loopback, for tests that take a shard down or fail one over.
type Cluster struct {
	Nodes    []*Server // the masters it was formed with
	Replicas []*Server // AddReplicas's, Replicas[i] first replicating Nodes[i]
	opts     Options   // of every node
}

// StartCluster starts n cluster-enabled servers, splits the hash slots
// evenly among them and waits until every node reports cluster_state:ok.
// nodeTimeout is the cluster's node timeout (failure detection). Options
// apply to every node; Port and Dir must be zero.
func StartCluster(ctx context.Context, n int, nodeTimeout time.Duration, opts Options) (*Cluster, error) {
	if n < 1 || opts.Port != 0 || opts.Dir != "" {
		return nil, fmt.Errorf("redisproc: start cluster: bad arguments (n=%d, port=%d, dir=%q)", n, opts.Port, opts.Dir)
	}
	opts.Args = append(append([]string(nil), opts.Args...),
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
		"--cluster-require-full-coverage", "yes",
	)
	c := &Cluster{opts: opts}
	for range n {
		s, err := Start(ctx, opts)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	if err := c.form(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// form assigns slots and epochs, introduces the nodes to each other and
// waits for the cluster to converge.
func (c *Cluster) form(ctx context.Context) error {
	n := len(c.Nodes)
	for i, s := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n
		slots := make([]int, 0, hi-lo)
		for slot := lo; slot < hi; slot++ {
			slots = append(slots, slot)
		}
		err := rdb.ClusterAddSlots(ctx, slots...).Err()
		if err == nil {
			err = rdb.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		if err == nil && i > 0 {
			err = rdb.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[0].Port())).Err()
		}
		_ = rdb.Close()
		if err != nil {
			return fmt.Errorf("redisproc: form cluster on %s: %w", s.Addr(), err)
		}
	}
	return c.WaitOK(ctx, 30*time.Second)
}

// WaitOK polls every node until each reports cluster_state:ok and knows
// all the others as connected masters, or timeout passes.
func (c *Cluster) WaitOK(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.check(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: cluster not ok after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: cluster: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func (c *Cluster) check(ctx context.Context) error {
	for _, s := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		info, err := rdb.ClusterInfo(ctx).Result()
		var nodes string
		if err == nil {
			nodes, err = rdb.ClusterNodes(ctx).Result()
		}
		_ = rdb.Close()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", s.Addr(), err)
		case !strings.Contains(info, "cluster_state:ok"):
			return fmt.Errorf("%s: cluster_state not ok", s.Addr())
		}
		connected := 0
		for line := range strings.SplitSeq(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(line)
			if len(f) >= 8 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") && f[7] == "connected" {
				connected++
			}
		}
		if connected != len(c.Nodes) {
			return fmt.Errorf("%s: sees %d of %d masters connected", s.Addr(), connected, len(c.Nodes))
		}
	}
	return nil
}

// AddReplicas starts one replica for each master and waits until every
// master reports it connected and in sync.
func (c *Cluster) AddReplicas(ctx context.Context) error {
	for _, m := range c.Nodes {
		r, err := Start(ctx, c.opts)
		if err != nil {
			return err
		}
		c.Replicas = append(c.Replicas, r)
		if err := c.replicate(ctx, r, m); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
		for {
			info, err := rdb.Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, ",state=online,") {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				_ = rdb.Close()
				return fmt.Errorf("redisproc: replica of %s not in sync: %v", m.Addr(), err)
			}
			time.Sleep(50 * time.Millisecond) // polling a server we do not control
		}
		_ = rdb.Close()
	}
	return c.WaitOK(ctx, 30*time.Second)
}

// replicate introduces r to the cluster and makes it a replica of m, once
// r has learnt m's node ID through the cluster bus.
func (c *Cluster) replicate(ctx context.Context, r, m *Server) error {
	rc := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer rc.Close()
	mc := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	defer mc.Close()
	id, err := mc.ClusterMyID(ctx).Result()
	if err == nil {
		err = rc.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(m.Port())).Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for err == nil {
		if err = rc.ClusterReplicate(ctx, id).Err(); err == nil || time.Now().After(deadline) {
			break
		}
		err = nil // "Unknown node": the handshake is not done yet
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("redisproc: replicate %s from %s: %w", r.Addr(), m.Addr(), err)
	}
	return nil
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Stop kills every node and removes their directories.
func (c *Cluster) Stop() {
	for _, s := range append(c.Nodes, c.Replicas...) {
		s.Stop()
	}
}

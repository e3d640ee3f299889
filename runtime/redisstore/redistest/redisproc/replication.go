package redisproc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicationTimeout bounds the waits for a replica to sync or to drop.
const replicationTimeout = 30 * time.Second

// StartReplica starts a server with opts that replicates master
// (--replicaof), and waits until master reports it in sync.
func StartReplica(ctx context.Context, master *Server, opts Options) (*Server, error) {
	opts.Args = append(append([]string(nil), opts.Args...), "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	r, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := WaitReplicas(ctx, master.Addr(), 1); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// CutLink takes replica's link to its master down the way a password
// rotation that missed the replica does: the replica is given a masterauth
// its master refuses and its link is closed (CLIENT KILL TYPE master). It
// goes on trying to reconnect, and failing; the master, at masterAddr,
// reports no connected replica, which CutLink waits for.
func CutLink(ctx context.Context, masterAddr string, replica *Server) error {
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr(), MaxRetries: -1})
	defer rc.Close()
	err := rc.ConfigSet(ctx, "masterauth", "not-the-password").Err()
	if err == nil {
		err = rc.ClientKillByFilter(ctx, "TYPE", "master").Err()
	}
	if err != nil {
		return fmt.Errorf("redisproc: cut the link of replica %s: %w", replica.Addr(), err)
	}
	return WaitReplicas(ctx, masterAddr, 0)
}

// MendLink undoes [CutLink]: the replica's masterauth is cleared, and
// MendLink waits until the master at masterAddr reports it in sync again.
func MendLink(ctx context.Context, masterAddr string, replica *Server) error {
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr(), MaxRetries: -1})
	defer rc.Close()
	if err := rc.ConfigSet(ctx, "masterauth", "").Err(); err != nil {
		return fmt.Errorf("redisproc: mend the link of replica %s: %w", replica.Addr(), err)
	}
	return WaitReplicas(ctx, masterAddr, 1)
}

// WaitReplicas polls the server at addr until it reports n connected
// replicas, each in sync (state=online).
func WaitReplicas(ctx context.Context, addr string, n int) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(replicationTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := rdb.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:"+strconv.Itoa(n)+"\r\n") && strings.Count(info, ",state=online,") == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: %s does not report %d replica(s) in sync after %v: %v %s", addr, n, replicationTimeout, err, info)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: waiting for the replicas of %s: %w", addr, ctx.Err())
		case <-tick.C:
		}
	}
}

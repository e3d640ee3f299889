package loadtest

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// Variants on a second server, a master with one replica attached: the
// harness starts both (child redis-servers on loopback, persistence off),
// whatever -redis says, so that a run compares the same wiring with and
// without a replica, alternating.
const (
	VariantIdemgenReplica        = "idemgen-replica"          // idemgen on a master with one replica: each completion acknowledged by it (WAIT)
	VariantIdemgenReplicaAcksOff = "idemgen-replica-acks-off" // the same with redisstore.WithReplicaAcks(0, 0): replicated, not waited for
	VariantFloorStoreReplica     = "floor-store-replica"      // floor-store on that master: what replication alone costs
)

// needsReplica reports whether a variant runs on the replicated master.
func needsReplica(name string) bool {
	return name == VariantIdemgenReplica || name == VariantIdemgenReplicaAcksOff || name == VariantFloorStoreReplica
}

// replicated is a child master with one child replica in sync.
type replicated struct {
	master, replica *redisproc.Server
	clients         replicatedClients
}

// replicatedClients are the clients of a replicated master and its replica.
type replicatedClients struct{ master, replica *redis.Client }

// startReplicated starts a master and a replica of it and waits until the
// replica is in sync (state=online).
func startReplicated(ctx context.Context, cfg Config, conns int) (*replicated, error) {
	opts := redisproc.Options{Path: cfg.RedisServer, CPUs: cfg.RedisCPUs}
	master, err := redisproc.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start the replicated master: %w", err)
	}
	replica, err := redisproc.StartReplica(ctx, master, opts)
	if err != nil {
		master.Stop()
		return nil, fmt.Errorf("start the replica: %w", err)
	}
	return &replicated{master: master, replica: replica, clients: replicatedClients{
		master:  redis.NewClient(&redis.Options{Addr: master.Addr(), PoolSize: conns, MinIdleConns: min(conns, 64), ContextTimeoutEnabled: true}),
		replica: redis.NewClient(&redis.Options{Addr: replica.Addr()}),
	}}, nil
}

// stop closes the client and kills both servers.
func (r *replicated) stop() {
	_ = r.clients.master.Close()
	_ = r.clients.replica.Close()
	r.replica.Stop()
	r.master.Stop()
}

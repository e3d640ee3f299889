// Package redisstore is the Redis implementation of [idemstore.Store], the
// per-key state machine behind idemgen's generated servers and idem.Do:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
//	store := redisstore.New(rdb)
//	if err := store.Check(ctx); err != nil { // at startup: reachable, scripts run, no eviction
//		return err
//	}
//	h := api.HandlerFromMux(api.WithIdempotency(impl, store), chi.NewRouter())
//
// With replicas, each completion is acknowledged by one before the client
// is answered (WAIT, pipelined with the script; see [WithReplicaAcks]), so
// that a failover does not undo an answered result.
//
// It is the only runtime package that imports go-redis and the Lua scripts
// of package lua, so a program that only uses generated clients links
// neither.
//
// For operators, [Store.Inspect] reads one key's record (state, lease or
// retention left, fence, status, sizes; the body only on request) and
// [Store.Forget] deletes it; command idemctl runs both from a shell.
package redisstore

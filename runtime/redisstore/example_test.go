package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// ExampleNew walks one key through the state machine by hand, on
// an in-process miniredis; any go-redis client works the same way.
func ExampleNew() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	store := redisstore.New(rdb, redisstore.WithPrefix("shop"))
	ctx := context.Background()
	req := idemstore.AcquireRequest{Key: "order-42", Token: "worker-1", Fingerprint: "f1", Lease: 30 * time.Second}

	first, _ := store.Acquire(ctx, req)
	fmt.Println("first:", first.Outcome == idemstore.OutcomeFirstRun, "fence", first.Fence)

	dup, _ := store.Acquire(ctx, idemstore.AcquireRequest{Key: "order-42", Token: "worker-2", Fingerprint: "f1", Lease: 30 * time.Second})
	fmt.Println("duplicate while running:", dup.Outcome == idemstore.OutcomeConflict)

	rec := &idemstore.Record{Status: 201, Body: []byte(`{"id":42}`)}
	if err := store.Complete(ctx, "order-42", "worker-1", rec, time.Hour); err != nil {
		panic(err)
	}
	replay, _ := store.Acquire(ctx, idemstore.AcquireRequest{Key: "order-42", Token: "worker-3", Fingerprint: "f1"})
	fmt.Println("retry:", replay.Record.Status, string(replay.Record.Body))

	other, _ := store.Acquire(ctx, idemstore.AcquireRequest{Key: "order-42", Token: "worker-4", Fingerprint: "f2"})
	fmt.Println("other request, same key:", other.Outcome == idemstore.OutcomeMismatch)
	// Output:
	// first: true fence 1
	// duplicate while running: true
	// retry: 201 {"id":42}
	// other request, same key: true
}

// ExampleStore_Check is the startup probe: Redis answers, runs the scripts
// and never evicts a record, and the client honours context deadlines. The
// in-process miniredis passes (it has no maxmemory); a client built without
// ContextTimeoutEnabled does not.
func ExampleStore_Check() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	ctx := context.Background()

	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	fmt.Println("check:", redisstore.New(rdb).Check(ctx))

	plain := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer plain.Close()
	err = redisstore.New(plain).Check(ctx)
	fmt.Println("without ContextTimeoutEnabled, misconfigured:", errors.Is(err, idemstore.ErrStoreMisconfigured))
	// Output:
	// check: <nil>
	// without ContextTimeoutEnabled, misconfigured: true
}

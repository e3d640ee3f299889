// Command previousserver serves one idempotent operation, CreateOrder of
// API shop at POST /orders, with the runtime of the source tree it is
// built in. TestRollingUpgradeBesideThePreviousVersion builds it from the
// previous key layout's commit, so that the previous version really runs
// beside the current one on one Redis. It prints its address, then serves.
//
// Every run of the handler appends "previous <fence>" to the Redis list
// prefix-runs:<key>, so that the test counts runs per key across
// processes; a request with X-Block waits in the handler for an element
// on prefix-go:<key>.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

func main() {
	addr := flag.String("redis", "", "Redis address")
	prefix := flag.String("prefix", redisstore.DefaultPrefix, "key prefix")
	lock := flag.Duration("lock", 30*time.Second, "the operation's lease")
	heartbeat := flag.Bool("heartbeat", true, "extend the lease while the handler runs")
	flag.Parse()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, ContextTimeoutEnabled: true})
	store := redisstore.New(rdb, redisstore.WithPrefix(*prefix), redisstore.WithLogger(nil))
	e := idem.NewEngine(store, idem.WithHeartbeat(*heartbeat), idem.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	op := idem.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders", Lock: *lock}
	run := func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		info, _ := idem.FromContext(r.Context())
		ctx := context.Background()
		rdb.RPush(ctx, *prefix+"-runs:"+k, fmt.Sprintf("previous %d", info.Fence))
		if r.Header.Get("X-Block") != "" {
			rdb.BLPop(ctx, 0, *prefix+"-go:"+k)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"key":%q,"by":"previous","fence":%d}`, k, info.Fence)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.Serve(w, r, &op, run) })}
	fmt.Fprintln(os.Stderr, srv.Serve(l))
	os.Exit(1)
}

// Command idemload is idemgen's load harness. On loopback only, it serves
// one trivial handler six ways (bare, naive check-then-set, naive SET NX
// lock, idemgen's engine, idemgen's generated strict server, and a floor of
// two trivial EVALSHA calls), and
// prints markdown tables of throughput, latency, duplicate executions,
// Redis memory per record and operations per Redis shard; with -chart FILE
// it also draws the throughput against the floor as a bar chart (the one
// BENCHMARKS.md and the README show). Without -redis it
// starts its own redis-server on a free loopback port and kills it at exit.
//
// Usage:
//
//	go run ./cmd/idemload [-mode compare|memory|capacity|all] [flags]
//
// Run with -h for the flags. See BENCHMARKS.md for the recorded numbers and
// the exact commands behind them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/idemgen/idemgen/internal/loadtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := loadtest.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command demo runs the petstore example end to end: the generated client
// against the generated server on an in-process Redis (or REDIS_URL), and
// narrates what happened.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/examples/petstore/demo"
)

// quiet drops go-redis's own log lines: the demo stops its Redis on purpose
// and narrates the outage itself.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	redis.SetLogger(quiet{}) // go-redis keeps its logger in a global; set once, here in main
	if err := demo.Run(ctx, os.Stdout, demo.Config{RedisURL: os.Getenv("REDIS_URL")}); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

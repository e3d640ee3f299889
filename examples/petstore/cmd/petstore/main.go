// Command petstore serves the example API. It keeps idempotency records in an
// in-process Redis (miniredis) unless REDIS_URL names a real one, and then
// needs IDEM_SCOPE_SECRET, the key that hashes callers' API keys (X-API-Key)
// into Redis key names.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/examples/petstore/server"
	"github.com/idemgen/idemgen/examples/petstore/shop"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "petstore:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	plain := flag.Bool("plain", false, "serve the plain ServerInterface instead of the strict server")
	metricsEvery := flag.Duration("metrics", 0, "print the OpenTelemetry metrics to stdout this often (and at exit); 0: off")
	flag.Parse()

	url := os.Getenv("REDIS_URL")
	secret, err := scopeSecret(os.Getenv("IDEM_SCOPE_SECRET"), url != "")
	if err != nil {
		return err
	}
	rdb, closeRedis, err := connect(url)
	if err != nil {
		return err
	}
	defer closeRedis()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := append(server.ScopedByAPIKey(secret), idem.WithLogger(logger))
	if *metricsEvery > 0 {
		hooks, flush, err := stdoutMetrics(*metricsEvery)
		if err != nil {
			return err
		}
		defer flush()
		opts = append(opts, idem.WithHooks(hooks))
	}
	store := redisstore.New(rdb)
	// The startup probe: Redis answers, runs the scripts and never evicts a
	// record; the error says what to change. (The store checks the same by
	// itself and refuses requests while it is not so.)
	check, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.Check(check); err != nil {
		return fmt.Errorf("idempotency store: %w", err)
	}
	h := server.NewStrictHandler(shop.New(), store, opts...)
	if *plain {
		h = server.NewPlainHandler(shop.New(), store, opts...)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown) // best effort on the way out
	}()
	logger.Info("listening", "addr", *addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// scopeSecret is the key that hashes API keys into Redis key names: the
// IDEM_SCOPE_SECRET variable, required on a real Redis (every instance and
// every restart must use the same one, or retries in flight run again).
// The in-process Redis dies with the process, so there a random one will do.
func scopeSecret(env string, realRedis bool) ([]byte, error) {
	switch {
	case env != "":
		return []byte(env), nil
	case realRedis:
		return nil, errors.New("IDEM_SCOPE_SECRET is not set: with REDIS_URL, set it to a random string of at least 16 bytes, the same for every instance")
	}
	return []byte(rand.Text()), nil
}

// connect returns a client for url, or for an in-process miniredis when url
// is empty.
func connect(url string) (*redis.Client, func(), error) {
	if url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opt.ContextTimeoutEnabled = true // store calls end with the store timeout
		rdb := redis.NewClient(opt)
		return rdb, func() { rdb.Close() }, nil
	}
	mr, err := embedredis.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("start in-process redis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	return rdb, func() { rdb.Close(); mr.Stop() }, nil
}

package redistest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// Server starts a private redis-server as opts say, stopped when the test
// ends. Without redis-server on PATH it skips the test, or fails it when
// CI=true, where every test must run.
func Server(t testing.TB, opts redisproc.Options) *redisproc.Server {
	t.Helper()
	srv, err := redisproc.Start(context.Background(), opts)
	switch {
	case errors.Is(err, redisproc.ErrNotFound) && os.Getenv("CI") != "true":
		t.Skipf("redis-server not installed: %v", err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

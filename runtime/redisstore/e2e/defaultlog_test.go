package e2e_test

import (
	"log"
	"log/slog"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// TestDefaultLoggerSaysWhatToChange: an engine given no logger option logs
// through slog.Default(), whose default handler writes to the standard
// logger's output (stderr), so a store flipped to allkeys-lru leaves a line
// there naming the policy and what to set instead. WithLogger still wins,
// and WithLogger(nil) silences the engine. Not parallel: it swaps the
// standard logger's output.
func TestDefaultLoggerSaysWhatToChange(t *testing.T) {
	srv := configuredServer(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	rdb := faultClient(t, srv.Addr())

	var stderr logBuffer
	prevOut, prevDefault := log.Writer(), slog.Default()
	log.SetOutput(&stderr)
	t.Cleanup(func() { log.SetOutput(prevOut); slog.SetDefault(prevDefault) })

	serve := func(t *testing.T, key string, opts ...idem.Option) {
		t.Helper()
		runs := newFaultRuns()
		// The store logs its own warnings (no persistence here); only the
		// engine's lines are under test.
		store := redisstore.New(rdb, redisstore.WithPrefix("deflog"), redisstore.WithLogger(nil))
		wantRefused(t, idem.NewEngine(store, opts...).Middleware(faultOp)(faultHandler(runs, nil)), runs, key, 1)
	}
	const why = "maxmemory-policy is allkeys-lru"

	t.Run("no option", func(t *testing.T) {
		serve(t, "default")
		if got := stderr.lines("store misconfigured", why, "noeviction"); len(got) != 1 {
			t.Errorf("%d lines on the standard logger saying what to change, want 1:\n%s", len(got), stderr.lines())
		}
	})
	t.Run("explicit logger wins", func(t *testing.T) {
		before := len(stderr.lines())
		var mine logBuffer
		serve(t, "explicit", idem.WithLogger(mine.logger()))
		if got := mine.lines("store misconfigured", why); len(got) != 1 {
			t.Errorf("%d lines on the explicit logger, want 1:\n%s", len(got), mine.lines())
		}
		if got := stderr.lines(); len(got) != before {
			t.Errorf("the default logger also got lines: %s", got[before:])
		}
	})
	t.Run("silenced", func(t *testing.T) {
		before := len(stderr.lines())
		serve(t, "silenced", idem.WithLogger(nil))
		if got := stderr.lines(); len(got) != before {
			t.Errorf("WithLogger(nil) still logged: %s", got[before:])
		}
	})
}

package ctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/cmdline"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

// idemctl layout says which key layout a Redis holds under a prefix, and
// where the upgrade between the layouts (package previouslayout) stands:
// whether its window is open, and when it ends.

// layoutCounts is what a scan of the prefix found, by layout.
type layoutCounts struct {
	current, previous int  // record keys of each layout
	scanned           int  // keys read
	complete          bool // the whole prefix was read
}

// runLayout runs idemctl layout with args (after "layout").
func runLayout(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdline.FlagSet("idemctl layout", usage, stderr)
	var redisURL, prefix string
	var timeout time.Duration
	fs.StringVar(&redisURL, "redis", "", "Redis URL (redis://[user:password@]host:port/db or rediss://...); default $REDIS_URL")
	fs.StringVar(&prefix, "prefix", redisstore.DefaultPrefix, "key prefix of the store (redisstore.WithPrefix)")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "timeout of the Redis calls (the scan of the prefix included)")
	if code, done := cmdline.Parse(fs, args); done {
		return code
	}
	if redisURL == "" {
		redisURL = os.Getenv("REDIS_URL")
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "idemctl: unexpected arguments %q\n", fs.Args())
		return ExitUsage
	case redisURL == "":
		fmt.Fprintln(stderr, "idemctl: -redis (or $REDIS_URL) is required")
		return ExitUsage
	}
	rdb, err := newClient(redisURL)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl: -redis: %v\n", err)
		return ExitUsage
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	store := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithLogger(nil))
	l, err := store.KeyLayout(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl: %v\n", err)
		return ExitError
	}
	counts, err := scanLayouts(ctx, rdb, prefix)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl: scan the prefix: %v\n", err)
		return ExitError
	}
	writeLayout(stdout, prefix, store.StorageKey(redisstore.KeyLayoutMarker), l, counts)
	return ExitOK
}

// scanLayouts counts the record keys of each layout under prefix, reading
// at most about maxScan keys.
func scanLayouts(ctx context.Context, rdb *redis.Client, prefix string) (layoutCounts, error) {
	var c layoutCounts
	var err error
	c.scanned, c.complete, err = scanPrefix(ctx, rdb, prefix, func(k string) {
		if strings.HasPrefix(k, "{") {
			return // a step journal, "{tag}:steps:..."
		}
		if _, _, _, ok := idemstore.SplitRecordKey(k); ok {
			c.current++
		} else if _, _, _, _, ok := previouslayout.SplitPreviousRecordKey(k); ok {
			c.previous++
		}
	})
	return c, err
}

// writeLayout writes what l and c say of the server under prefix; marker
// is the marker's Redis key.
func writeLayout(w io.Writer, prefix, marker string, l redisstore.KeyLayout, c layoutCounts) {
	line := func(name, format string, args ...any) {
		fmt.Fprintf(w, "%-8s %s\n", name, fmt.Sprintf(format, args...))
	}
	read := fmt.Sprintf("all %d keys under prefix %q read", c.scanned, prefix)
	if !c.complete {
		read = fmt.Sprintf("the first %d keys under prefix %q read", c.scanned, prefix)
	}
	held := "the current one (operation tokens)"
	switch {
	case c.previous > 0 && c.current > 0:
		held = "both: the current one (operation tokens) and the previous one (full names)"
	case c.previous > 0:
		held = "the previous one (full names)"
	case c.current == 0:
		held = "none yet: no record keys"
	}
	line("layout", "%s: %d record keys of the current layout, %d of the previous (%s)", held, c.current, c.previous, read)
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case l.Marker == "":
		line("marker", "%s absent: no process running previouslayout has used this server", marker)
	case l.Malformed:
		line("marker", "%s holds %q, neither 0 nor a time: previouslayout answers 503 until it is fixed (DEL it to start the window now, SET it to 0 to end it)", marker, l.Marker)
		return
	case l.Since.IsZero():
		line("marker", "%s is 0: the window was ended by hand", marker)
	default:
		line("marker", "%s: the first process running previouslayout used this server at %s", marker, at(l.Since))
	}
	estimated := ""
	if l.Estimated {
		estimated = " (no process recorded the end: a day of rollout and the default retention, 24h; a longer retention ends it later)"
	}
	switch {
	case l.Open():
		line("window", "open until %s, %v from now%s: build every store with previouslayout.New until then; a store built with redisstore.New refuses this server until then (redisstore.WithPreviousLayoutIgnored overrides it)",
			at(l.WindowEnd), round(l.WindowEnd.Sub(l.Now)), estimated)
		if l.Now.Before(l.RolloutEnd) {
			line("rollout", "until %s: records are written under both layouts, for processes of the previous version", at(l.RolloutEnd))
		}
	case !l.WindowEnd.IsZero():
		line("window", "ended at %s%s: redisstore.New serves this server; previouslayout.New is no longer needed", at(l.WindowEnd), estimated)
	case l.Marker == "0":
		line("window", "ended: redisstore.New serves this server; previouslayout.New is no longer needed")
	case c.previous > 0:
		line("window", "not started: this server holds records of the previous layout; upgrade with previouslayout.New (docs/upgrading.md)")
	default:
		line("window", "none: nothing to upgrade; redisstore.New serves this server")
	}
}

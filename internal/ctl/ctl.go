// Package ctl is idemctl's command line: it reads one key's record from an
// idemgen server's Redis, or forgets it, through redisstore's Inspect and
// Forget, and says which key layout the Redis holds (layout).
package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/cmdline"
	"github.com/idemgen/idemgen/internal/probe"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

const usage = `usage: idemctl inspect -redis URL -api API -op OPERATION [-scope SCOPE] -key KEY [-body]
       idemctl forget  -redis URL -api API -op OPERATION [-scope SCOPE] -key KEY [-force]
       idemctl layout  -redis URL [-prefix idem]
       idemctl probe   -spec openapi.yaml [-config cfg.yaml] -url URL [-header 'Name: value']... [-event name=URL]... -yes | -dry-run

probe checks a deployed API against its spec's idempotency contract, and
sends REAL requests that create real resources on the target: see
idemctl probe -h.

layout says which key layout the Redis holds under the prefix (record keys
named by operation tokens, or by the previous layout's full names), and
whether the upgrade window of redisstore/previouslayout is open and until
when: until then a store built with redisstore.New refuses the server.

inspect prints the record of one idempotency key: its state, the lease or
retention it has left, its fence, the stored status, header names and body
size. The body is printed only with -body.

forget deletes the record and its step journal (idem.Step), so that the
next request with the key runs the operation again, every step included; a
key whose run failed keeps its journal without a record, and forget deletes
that too. It refuses a record in progress unless -force is given:
its handler may still be running, and a retry would run the operation a
second time beside it.

The key is the client's key; -api names the API's identity in storage keys:
the API field of the generated idemop.Operation values (a slug of the spec's
info.title, or its x-idempotent api), or the server's idem.WithAPI; leave
it out for records stored without one. -op names the operation, by its
operationId in the spec (createPet) or its Go name (CreatePet, under which
records are stored); when nothing is found, idemctl lists the operations
that have records under the prefix. -scope names the scope the server
computed for the request: the tenant or principal its
idem.WithScope function returns, or the header value of
idem.WithScopeFromHeader (the API key). Without -scope the record is looked
up in the shared key space. The server stores a scope only as a keyed hash
(idemstore.ScopeKey); give idemctl the server's idem.WithScopeSecret in the
environment variable that -scope-secret-env names (none for a server that
uses WithScope without a secret).

`

// Exit codes of Run.
const (
	ExitOK       = cmdline.ExitOK
	ExitError    = 1 // Redis failed, or forget was refused
	ExitUsage    = cmdline.ExitUsage
	ExitNoRecord = 3 // the key holds no record
)

// options are the flags of both commands.
type options struct {
	redisURL, prefix string
	api, op          string
	scope, key       string
	scoped           bool   // -scope was given, even as ""
	scopeSecretEnv   string // the variable holding the scope secret
	body, force      bool
	retention, lock  time.Duration
	timeout          time.Duration
}

// Run runs idemctl with args (without the program name) and returns the
// process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "probe" {
		return probe.Run(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "layout" {
		return runLayout(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "inspect" && args[0] != "forget") {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	o, code, done := parseFlags(args[0], args[1:], stderr)
	if done {
		return code
	}
	rdb, err := newClient(o.redisURL)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl: -redis: %v\n", err)
		return ExitUsage
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	c := command{
		name: args[0], o: o, stdout: stdout, stderr: stderr,
		// The store's warnings are about the server it serves, not for an operator's look at one key.
		store: redisstore.New(rdb, redisstore.WithPrefix(o.prefix), redisstore.WithLogger(nil)),
	}
	c.scope, c.secret = o.scopeKey()
	err = c.find(ctx, rdb)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, redisstore.ErrNoRecord):
		return ExitNoRecord
	}
	fmt.Fprintf(stderr, "idemctl: %v\n", err)
	return ExitError
}

// parseFlags parses the flags of the command cmd (inspect or forget).
// When done, the command is over with the exit code code.
func parseFlags(cmd string, args []string, stderr io.Writer) (o options, code int, done bool) {
	fs := cmdline.FlagSet("idemctl "+cmd, usage, stderr)
	fs.StringVar(&o.redisURL, "redis", "", "Redis URL (redis://[user:password@]host:port/db or rediss://...); default $REDIS_URL")
	fs.StringVar(&o.prefix, "prefix", redisstore.DefaultPrefix, "key prefix of the store (redisstore.WithPrefix)")
	fs.StringVar(&o.api, "api", "", "the API's identity in storage keys (idemop.Operation.API, or the server's idem.WithAPI); empty: none")
	fs.StringVar(&o.op, "op", "", "operation: the spec's operationId or its Go name (required)")
	fs.StringVar(&o.scope, "scope", "", "scope of the request (tenant, principal, API key), if the server scopes keys")
	fs.StringVar(&o.scopeSecretEnv, "scope-secret-env", "IDEM_SCOPE_SECRET", "environment variable with the server's idem.WithScopeSecret; unset or empty: no secret")
	fs.StringVar(&o.key, "key", "", "the client's idempotency key (required)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "timeout of the Redis call")
	if cmd == "inspect" {
		fs.BoolVar(&o.body, "body", false, "print the stored response body too")
		fs.DurationVar(&o.retention, "retention", idemop.DefaultRetention, "the operation's x-idempotent.retention, to estimate a completed record's age")
		fs.DurationVar(&o.lock, "lock", idemop.DefaultLock, "the operation's x-idempotent.lock, to estimate an in-progress record's age")
	} else {
		fs.BoolVar(&o.force, "force", false, "delete a record in progress too (see above for the risk)")
	}
	if code, done := cmdline.Parse(fs, args); done {
		return o, code, true
	}
	fs.Visit(func(f *flag.Flag) { o.scoped = o.scoped || f.Name == "scope" })
	if o.redisURL == "" {
		o.redisURL = os.Getenv("REDIS_URL")
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "idemctl: unexpected arguments %q\n", fs.Args())
		return o, ExitUsage, true
	case o.redisURL == "" || o.op == "" || o.key == "":
		fmt.Fprintln(stderr, "idemctl: -redis (or $REDIS_URL), -op and -key are required")
		return o, ExitUsage, true
	}
	return o, ExitOK, false
}

// scopeKey is the stored form of -scope ("" without -scope), and whether
// a scope secret was given.
func (o options) scopeKey() (scope string, secret bool) {
	key := []byte(os.Getenv(o.scopeSecretEnv))
	if !o.scoped {
		return "", len(key) > 0
	}
	if len(key) == 0 {
		key = nil
	}
	return idemstore.ScopeKey(key, o.scope), len(key) > 0
}

// command is one run of inspect or forget.
type command struct {
	name           string // inspect or forget
	o              options
	store          *redisstore.Store
	scope          string // the stored form of -scope
	secret         bool   // a scope secret was given
	stdout, stderr io.Writer
}

// find runs c on the record of -op, else on the same key under the
// operation's Go name, else under a stored operation whose name matches
// -op; it says which on stderr. When there is none it explains what is
// stored instead and returns redisstore.ErrNoRecord.
func (c command) find(ctx context.Context, rdb *redis.Client) error {
	o := c.o
	err := c.at(ctx, o.op)
	if name := goName(o.op); errors.Is(err, redisstore.ErrNoRecord) && name != o.op {
		if err = c.at(ctx, name); err == nil {
			fmt.Fprintf(c.stderr, "idemctl: operation %s is stored under its Go name %s\n", o.op, name)
		}
	}
	if !errors.Is(err, redisstore.ErrNoRecord) {
		return err
	}
	found, serr := scanStored(ctx, rdb, o.prefix, o.api, o.op, o.key)
	if name := found.matching(o.op); serr == nil && name != "" && name != goName(o.op) {
		if err = c.at(ctx, name); err == nil {
			fmt.Fprintf(c.stderr, "idemctl: operation %s is stored as %s\n", o.op, name)
		}
	}
	if errors.Is(err, redisstore.ErrNoRecord) {
		found.explain(c.stderr, o, c.secret)
		if serr != nil {
			fmt.Fprintf(c.stderr, "  (listing the prefix failed: %v)\n", serr)
		}
	}
	return err
}

// at runs c on the key's record of the operation op.
func (c command) at(ctx context.Context, op string) error {
	o := c.o
	o.op = op
	// The current layout's key, then the previous layout's, which
	// holds records written before the upgrade for a retention, and a
	// copy of every record during the rollout: forget forgets both.
	var err error
	forgot := false
	for _, key := range []string{idemstore.RecordKeyIn(o.api, op, c.scope, o.key), previouslayout.PreviousRecordKey(o.api, op, c.scope, o.key)} {
		if c.name == "inspect" {
			err = inspect(ctx, c.store, key, o, c.stdout)
		} else if err = forget(ctx, c.store, key, o, c.stdout, c.stderr); err == nil {
			forgot = true
			continue
		}
		if !errors.Is(err, redisstore.ErrNoRecord) {
			return err
		}
	}
	if forgot {
		return nil
	}
	return err
}

// formatName describes the record formats of redisstore.RecordInfo.Format.
var formatName = map[int]string{1: "text, written before the compact record", 2: "compact, without its body's length", 3: "compact"}

// inspect prints the record of key.
func inspect(ctx context.Context, store *redisstore.Store, key string, o options, w io.Writer) error {
	info, err := store.Inspect(ctx, key)
	if err != nil {
		return err
	}
	line := func(name, format string, args ...any) {
		fmt.Fprintf(w, "%-9s %s\n", name, fmt.Sprintf(format, args...))
	}
	line("key", "%s", info.RedisKey)
	if _, _, _, current := idemstore.SplitRecordKey(key); current {
		line("operation", "%s of API %q (token %s)", o.op, o.api, idemstore.OperationToken(o.api, o.op))
	} else {
		line("operation", "%s of API %q, under its key of the previous layout (written before the upgrade)", o.op, o.api)
	}
	line("state", "%s", info.State)
	line("format", "%d (%s)", info.Format, formatName[info.Format])
	if info.State == redisstore.StateInProgress {
		line("fence", "%d", info.Fence)
		line("owner", "%s", present(info.Owner))
		// One clock: the lease. The record's own TTL runs Abandoned past
		// it, which matters only once the lease has lapsed.
		if info.LeaseRemaining > 0 {
			line("lease", "%v left: a retry now is answered 409; once it lapses, the next request with this key takes the record over (fence %d)",
				round(info.LeaseRemaining), info.Fence+1)
			line("age", "%s", age(info.Age(o.retention, o.lock), "since the lease was acquired or extended", "-lock", o.lock, info.LeaseRemaining, "lease left"))
			return nil
		}
		line("lease", "lapsed %v ago: its handler is presumed dead; the next request with this key takes the record over (fence %d)", round(-info.LeaseRemaining), info.Fence+1)
		line("expires", "in %v, if no request with this key comes before", round(info.TTL))
		return nil
	}
	line("status", "%d", info.Status)
	line("headers", "%s", strings.Join(info.HeaderNames, ", "))
	switch {
	case info.BodyOmitted:
		line("body", "omitted (over the stored-body limit); replays say so in Idempotency-Body-Omitted")
	case info.Compressed:
		line("body", "%d bytes stored, gzip (%d bytes decompressed)", info.BodySize, len(info.Body()))
	default:
		line("body", "%d bytes", info.BodySize)
	}
	line("retained", "%v more: replayed to every retry until then", round(info.TTL))
	line("age", "%s", age(info.Age(o.retention, o.lock), "since completion", "-retention", o.retention, info.TTL, "retention left"))
	if o.body && !info.BodyOmitted {
		fmt.Fprintf(w, "\n%s\n", info.Body())
	}
	return nil
}

// forget deletes the record of key.
func forget(ctx context.Context, store *redisstore.Store, key string, o options, w, stderr io.Writer) error {
	err := store.Forget(ctx, key, o.force)
	if errors.Is(err, redisstore.ErrInProgress) {
		return fmt.Errorf("not forgotten: %w.\nWith -force, a retry runs the operation again while the original may still run; the original's result is then not stored (its lease is gone), but whatever it did outside the store stays done. Force only once it is known to be dead, or check its lease with idemctl inspect first", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "forgot operation %s, scope %q, key %q: the next request with this key runs the operation again\n", o.op, o.scope, o.key)
	if o.force {
		fmt.Fprintln(stderr, "idemctl: -force: if the record was in progress, its handler may still be running; its result will not be stored")
	}
	return nil
}

// age words the estimate of a record's age, which is the operation's
// setting (flag, value) less what the record has left: a record with more
// left than the setting was written under a longer one, so its age is not
// known from the flags, and saying "-71h since completion" would be wrong.
func age(estimate time.Duration, since, flag string, value, left time.Duration, leftName string) string {
	if estimate < 0 {
		return fmt.Sprintf("unknown: %v %s is more than %s %v, so the operation's %s is longer; pass its value (%s) to estimate the age",
			round(left), leftName, flag, value, strings.TrimPrefix(flag, "-"), flag)
	}
	return fmt.Sprintf("%v %s (if %s %v is the operation's)", round(estimate), since, flag, value)
}

func present(ok bool) string {
	if ok {
		return "present"
	}
	return "absent"
}

// round rounds d to what a person reads.
func round(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// newClient is idemctl's go-redis client of url, built as redisstore asks:
// with ContextTimeoutEnabled, so that the store's timeout is the context's
// and go-redis does not wait out its own socket timeouts.
func newClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

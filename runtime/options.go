package idem

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Option configures an [Engine] (and [Do]): key space (scope), hooks,
// logger, fail-open, limits, replayed headers, heartbeat, reconciler. The
// zero configuration is the documented default: fail closed, 1 MiB limits,
// the standard replay allow-list, heartbeat on, logs through slog.Default(), and no
// scope, which an engine for operations that declare security refuses (see
// idemgen.NewEngineFor).
type Option func(*config)

// ScopeFunc returns the scope of a request, such as its tenant or
// authenticated principal; keys of different scopes never meet. An error
// that is a [*Problem] is answered as is; any other error is answered 500
// with code scope-failed.
type ScopeFunc func(r *http.Request) (string, error)

// Reconciler is called before a handler runs again on a stale lease that was
// taken over (Info.Recovered is true), so the application can check its
// source of truth first. Returning an error releases the lease and answers
// 503 reconcile-failed, or the error itself when it is a [*Problem]. r is nil
// for [Do].
type Reconciler func(ctx context.Context, info Info, r *http.Request) error

// config is what Options set; its zero value plus defaults() is the default.
type config struct {
	scope           ScopeFunc
	scopeKind       scopeKind // which option chose the key space
	scopeErr        string    // contradicting key-space options
	scopeHeader     string    // WithScopeFromHeader's header
	scopeSecret     []byte    // WithScopeSecret's key, nil: defaultScopeSecret
	anonymous       bool      // WithAnonymousCallers
	api             string    // WithAPI's identity, when apiSet
	apiSet          bool
	scopes          *idemstore.ScopeHasher // WithScopeSecret's, or the default
	hooks           Hooks
	logger          *slog.Logger
	loggerSet       bool // WithLogger was given, even with nil
	failOpen        bool
	bodyLimit       int64
	storedBodyLimit int64
	replayHeaders   []string
	noHeartbeat     bool
	reconciler      Reconciler
	storeTimeout    time.Duration
	strictKeys      bool
	steps           stepLimits // WithStepLimits (step.go); zero fields: the defaults
}

// newConfig applies opts over the defaults.
func newConfig(opts []Option) config {
	c := config{
		bodyLimit:       DefaultBodyLimit,
		storedBodyLimit: DefaultStoredBodyLimit,
		storeTimeout:    DefaultStoreTimeout,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	switch {
	case !c.loggerSet:
		c.logger = slog.Default()
	case c.logger == nil:
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.scopes = idemstore.NewScopeHasher(c.scopeSecret)
	return c
}

// WithAPI sets the API identity in the storage keys of every operation the
// engine serves, in place of the one generated code declares
// ([idemop.Operation.API], from the spec's info.title or x-idempotent's api): for
// one generated API deployed as two services on one store, say. "" leaves
// the identity out of the keys, the key space of releases before it
// existed, so records stored by them are found again.
func WithAPI(name string) Option {
	return func(c *config) { c.api, c.apiSet = name, true }
}

// WithHooks sets callbacks for the engine's events (metrics, tracing).
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithLogger sets the logger for store errors, a misconfigured store (what
// to change) and lost leases. Keys are never logged; a short hash of the
// storage key stands in for them. Without this option the engine logs
// through slog.Default() as it is when the engine is built (stderr unless
// the program set another); nil logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger, c.loggerSet = l, true }
}

// WithFailOpen makes an unreachable store run the handler unprotected, with
// the response marked Idempotency-Degraded: true, instead of answering 503.
// A misconfigured store ([idemstore.ErrStoreMisconfigured]) is answered 503 all the
// same: fail-open covers an outage, not a store set up to lose records.
func WithFailOpen(on bool) Option { return func(c *config) { c.failOpen = on } }

// WithBodyLimit sets the request body limit in bytes (default 1 MiB); a
// larger body is answered 413. n <= 0 keeps the default.
func WithBodyLimit(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.bodyLimit = n
		}
	}
}

// WithStoredBodyLimit sets the largest response body that is stored for
// replay (default 1 MiB). A larger body is answered to its client but stored
// without body; its replays carry Idempotency-Body-Omitted: true. n <= 0
// keeps the default.
func WithStoredBodyLimit(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.storedBodyLimit = n
		}
	}
}

// WithReplayHeaders adds response headers to the replay allow-list
// (Content-Type, Content-Language, Location, ETag, Link). Authorization,
// Proxy-Authorization, WWW-Authenticate, Proxy-Authenticate, Set-Cookie and
// hop-by-hop headers are never stored, even when listed.
func WithReplayHeaders(names ...string) Option {
	return func(c *config) { c.replayHeaders = append(c.replayHeaders, names...) }
}

// WithHeartbeat turns the lease heartbeat on (the default) or off: it extends
// a running handler's lease, or keeps its transaction alive on a SQL store
// (idemstore.LiveRunTx). With it off, a handler that outlives its lock may
// be taken over by a retry.
func WithHeartbeat(on bool) Option { return func(c *config) { c.noHeartbeat = !on } }

// WithReconciler sets the hook run before a recovered (taken over) lease
// runs the handler again.
func WithReconciler(fn Reconciler) Option { return func(c *config) { c.reconciler = fn } }

// WithStoreTimeout bounds every store call (default DefaultStoreTimeout)
// through its context. Store calls run detached from the request's
// cancellation, bounded by this timeout only: a call cut off once sent
// could leave a record that nobody owns. Calls that start close together
// share one deadline, so a call's bound may be up to 1/16 of d shorter. d <= 0 keeps the
// default. go-redis applies context deadlines to socket I/O only with
// Options.ContextTimeoutEnabled; without it, its ReadTimeout and
// WriteTimeout are what bound a call to an unresponsive server.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.storeTimeout = d
		}
	}
}

// WithStrictKeys requires the key header to be an RFC 8941 sf-string
// ("quoted"), as the IETF draft says. By default bare tokens are accepted too.
func WithStrictKeys(on bool) Option { return func(c *config) { c.strictKeys = on } }

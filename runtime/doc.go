// Package idem is the runtime behind idemgen's generated code: it runs an
// operation at most once per idempotency key, replays the stored answer to
// every retry, and retries calls safely on the client side. It links no
// database driver; the stores live beside it, in packages redisstore and
// pgstore.
//
// # Server wiring
//
// Generated code builds an [Engine] over an [idemstore.Store]
// (redisstore.New(rdb)) in WithIdempotency (plain ServerInterface) and
// NewStrictHandlerWithIdempotency (strict server); both take [Option]
// values after the store. The key space comes first: [WithScope] (tenant or principal),
// [WithScopeFromHeader] (an API key) with [WithScopeSecret] (the key of the
// hash that keeps scopes out of storage keys), or [WithSharedKeySpace]; for
// operations whose spec requires security one of them is required, and the
// constructor panics without it. Then [WithHooks] and [WithLogger] (metrics,
// logs with redacted keys), [WithFailOpen], [WithBodyLimit], [WithStoredBodyLimit],
// [WithReplayHeaders], [WithHeartbeat], [WithReconciler],
// [WithStoreTimeout] and [WithStrictKeys]. Routes that are not generated use
// [Engine.Middleware] with an [idemop.Operation] of their own. Every answer
// the engine gives instead of the handler's is a [Problem] (RFC 9457) with a
// stable code ([idemop.CodeConflict], [idemop.CodeFingerprintMismatch],
// ...); so is the generated IdempotencyErrorHandler's answer to a request
// oapi-codegen's router cannot bind.
//
// # Metrics and traces
//
// [Hooks] report each step of the protocol, and its StoreCall and Handler
// hooks bracket the store calls and the handler for latency and spans;
// [WithAttemptHook] reports each attempt of a client call. Package idemotel
// (runtime/idemotel) turns both into OpenTelemetry metrics and spans; this
// package does not depend on OpenTelemetry.
//
// # In a handler
//
// A handler running under the engine reads its key and fencing token with
// [FromContext].
//
// # Without HTTP
//
// [Do] runs a function at most once per key, for code that receives
// at-least-once deliveries (a queue consumer).
//
// # The client
//
// Generated IdempotentClient methods hold a [Caller] ([NewCaller] with
// [ClientOption] values such as [WithPolicy] and [WithAttemptHook]) and make
// one [Call] per logical call: one key, the same body bytes on every
// attempt, backoff by the operation's [idemop.RetryPolicy]. A caller passes
// [CallOption] values per call: [WithKey], [WithCallPolicy], [WithResult],
// and [WithRequestEditors] for request editors of that call alone (values of
// oapi-codegen's RequestEditorFn, as they are). A call that gives up returns
// a [*RetryError]; one whose final answer is an RFC 9457 problem returns the
// typed response and a [*ProblemError] with the decoded [Problem].
//
// # Names written elsewhere
//
// Each name has one home. What an operation is ([idemop.Operation],
// [idemop.ClientOperation], [idemop.RetryPolicy]), the problem codes and
// headers, and the version range that generated files check are package
// idemop's; the store and its failures are package idemstore's. What only
// generated code and the framework adapters call (an engine for the
// generated operations, the strict server's step in front of its decoder,
// a client call's body and request editor) is package idemgen's
// (runtime/idemgen): hand-written code does not need it.
// [Engine.ServeRequest], over a [Request] given in its parts, is the entry
// point of the framework adapters that are not net/http (fiber's).
//
// # Stores
//
// An [idemstore.Store] is the atomic per-key state machine the engine runs on;
// packages redisstore, pgstore, mysqlstore and idemstore/memstore
// implement it. Its contract (the
// interfaces, their types, the transactional TxStore, the key layout that
// tools such as idemctl read) is package idemstore, which stores import
// instead of this one, as database/sql/driver is for database/sql; its
// package idemstoretest is the conformance suite a store runs.
// The store's failures that users match are idemstore's:
// [idemstore.ErrStoreUnavailable], [idemstore.ErrStoreMisconfigured],
// [idemstore.ErrUnreplicated] and [idemstore.ErrTxEnded].
package idem

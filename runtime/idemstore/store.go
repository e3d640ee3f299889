package idemstore

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Store is the atomic per-key state machine behind the engine (package
// idem). Every method touches exactly one key. Packages redisstore and
// pgstore implement it; package idemstoretest is the conformance suite
// that they, and a store of one's own, run.
type Store interface {
	// Acquire runs the acquire transition (see lua/acquire.lua).
	Acquire(ctx context.Context, req AcquireRequest) (Acquisition, error)
	// Complete stores rec for key if token still owns the in-progress lease;
	// it returns ErrNotOwner otherwise and leaves the record untouched, and
	// an error matching ErrUnreplicated when it stored rec but could not
	// confirm its durability (replicas) in time. rec,
	// its header and its body are shared with the response being sent: a
	// store that keeps them past its return must copy them.
	Complete(ctx context.Context, key, token string, rec *Record, retention time.Duration) error
	// Release deletes the in-progress lease if token owns it, so that a retry
	// runs again; ErrNotOwner otherwise.
	Release(ctx context.Context, key, token string) error
	// Extend pushes the lease deadline to now+lease if token owns it;
	// ErrNotOwner otherwise.
	Extend(ctx context.Context, key, token string, lease time.Duration) error
}

// AcquireRequest is the input of [Store.Acquire].
type AcquireRequest struct {
	Key         string        // full storage key, without the store's prefix
	Token       string        // random owner token of this attempt
	Fingerprint string        // request fingerprint (hex SHA-256)
	Lease       time.Duration // in-progress lease
	// Origin is what the engine composed Key and Fingerprint of, for a
	// store decorator that also finds the records of an earlier layout of
	// keys and fingerprints (package redisstore/previouslayout, during an
	// upgrade it was turned on for); stores ignore it. nil from a caller
	// that has none.
	Origin *Origin
}

// Origin is what [AcquireRequest.Key] and [AcquireRequest.Fingerprint] were
// composed of.
type Origin struct {
	API       string // the API identity (package idem: Operation.API, or the engine's WithAPI)
	Operation string // the operation's ID
	Scope     string // the hashed scope ([ScopeKey]); "" for a shared key space
	Key       string // the client's idempotency key
	// Request is the request's own fingerprint (hex SHA-256): Fingerprint
	// is the SHA-256 of the API identity, the operation and it, and it is
	// what fingerprints were before they covered the API identity.
	Request string
}

// Defaults a store applies to a zero duration it is given, which are the
// engine's defaults too (package idem: DefaultLock, DefaultRetention,
// DefaultStoreTimeout).
const (
	DefaultLease     = 30 * time.Second // the in-progress lease (x-idempotent's lock)
	DefaultRetention = 24 * time.Hour   // how long a completed record is kept
	DefaultTimeout   = 2 * time.Second  // a store call, detached from the request
)

// OperationNamer is a [Store] that keeps the names behind the operation
// tokens of its keys ([OperationToken]), for tools that list records
// (idemctl). The engine calls NameOperation once per operation and engine,
// in the background, the first time it serves the operation; a failure is
// logged at debug level and costs nothing else.
type OperationNamer interface {
	Store
	NameOperation(ctx context.Context, token, api, op string) error
}

// Outcome is the result of an acquire transition.
type Outcome uint8

// The outcomes of [Store.Acquire].
const (
	OutcomeFirstRun  Outcome = iota + 1 // new record, caller owns the lease (fence 1)
	OutcomeRecovered                    // stale lease taken over, caller owns it (fence+1)
	OutcomeReplay                       // completed: Acquisition.Record holds the result
	OutcomeConflict                     // in progress elsewhere: Acquisition.Remaining
	OutcomeMismatch                     // key exists with another fingerprint
)

// Acquisition is the result of [Store.Acquire].
type Acquisition struct {
	Outcome   Outcome
	Fence     int64         // fencing token, for FirstRun and Recovered
	Remaining time.Duration // remaining lease, for Conflict
	Record    *Record       // stored result, for Replay
}

// Record is a stored response.
type Record struct {
	Status      int
	Header      http.Header // allow-listed headers only
	Body        []byte
	BodyOmitted bool // the body exceeded the stored-body limit and was not kept
}

// ErrStoreUnavailable is matched (errors.Is) by every failure of the store
// itself: unreachable, timed out, refusing the command, or answering what
// the engine cannot decode.
var ErrStoreUnavailable = errors.New("idem: store unavailable")

// StoreError is a failure of the store itself, as a [Store] reports it. It
// matches [ErrStoreUnavailable] and its cause under errors.Is and errors.As.
type StoreError struct {
	Op  string // "acquire", "complete", "release", "extend", ...
	Err error  // the cause
}

// Error implements error. The key is left out, as keys are not logged.
func (e *StoreError) Error() string { return "idem: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns ErrStoreUnavailable and the cause.
func (e *StoreError) Unwrap() []error { return []error{ErrStoreUnavailable, e.Err} }

// ErrStoreMisconfigured is matched (errors.Is), together with
// [ErrStoreUnavailable], by the failures of a store that is reachable but set
// up so that it cannot keep the promise: a Redis that may evict records
// (maxmemory-policy), or that denies the scripts (ACL, disabled scripting).
// The engine answers it 503 store-misconfigured and never runs the handler,
// fail-open or not; its error says what to change.
var ErrStoreMisconfigured = errors.New("idem: store misconfigured")

// ErrUnreplicated is matched (errors.Is) by the error of a Complete that
// stored the result but could not confirm in time that it survives the loss
// of the server that holds it (Redis with replicas: no replica acknowledged
// it). A retry replays the result, unless a failover loses it first; then
// the retry runs the handler again. The engine answers the handler's
// response marked Idempotency-Degraded: true and calls Hooks.Unreplicated,
// so that no plain 2xx is answered that a failover can undo.
var ErrUnreplicated = errors.New("idem: result stored, but no replica acknowledged it in time")

// ErrNotOwner is returned by Complete, Release and Extend when the caller's
// token no longer owns the lease (it expired and another worker took over,
// or the record is gone).
var ErrNotOwner = errors.New("idem: lease is not owned by this token")

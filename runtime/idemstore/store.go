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
	// PreviousKey is the key of the same record in the previous key layout
	// ([PreviousRecordKey]), set only for a [PreviousKeyStore] while
	// records written under it may live; "" otherwise. Such a store that
	// creates the record at Key looks at PreviousKey too, and answers from
	// a record there (replay, mismatch, conflict) as it would from one at
	// Key, so that a retry across the upgrade runs nothing twice; while
	// processes of the previous version may still run (the rollout) it
	// also writes the record there, as that version reads it, and a
	// takeover's fence is above the fences under both keys. Other stores
	// ignore it.
	PreviousKey string
	// PreviousFingerprint is the request's fingerprint as the engine
	// computed it before fingerprints covered the API identity and the
	// operation's API (hex SHA-256), set while records stored with it may
	// live; "" otherwise. A store treats a record holding it as one holding
	// Fingerprint, so that a retry of a request answered before the upgrade
	// is still replayed. Records a store writes under Key hold Fingerprint;
	// under PreviousKey, for the previous version, PreviousFingerprint.
	PreviousFingerprint string
}

// PreviousKeyStore is a [Store] that kept records under the previous key
// layout ([PreviousRecordKey]) and looks for them there after an upgrade
// ([AcquireRequest.PreviousKey]). The engine composes the previous key only
// while such a record may live: until KeyLayoutSince's time plus the
// operation's retention plus [PreviousLayoutRollout].
type PreviousKeyStore interface {
	Store
	// KeyLayoutSince returns when the first process of the current key
	// layout checked the store's server, which is when processes of the
	// previous one began to be replaced; the zero time when the server
	// holds no record of the previous layout and no process of it runs (an
	// operator said so: an empty server says nothing of the processes
	// still to be replaced). known is false until the store has asked its
	// server (before its first acquire or check), and while what it holds
	// is malformed.
	KeyLayoutSince() (since time.Time, known bool)
}

// Defaults a store applies to a zero duration it is given, which are the
// engine's defaults too (package idem: DefaultLock, DefaultRetention,
// DefaultStoreTimeout).
const (
	DefaultLease     = 30 * time.Second // the in-progress lease (x-idempotent's lock)
	DefaultRetention = 24 * time.Hour   // how long a completed record is kept
	DefaultTimeout   = 2 * time.Second  // a store call, detached from the request
)

// PreviousLayoutRollout is how long processes of the previous key layout
// are taken to go on writing records after the first process of the
// current one started: a rolling upgrade that takes longer leaves records
// that a retry on a new process does not find.
const PreviousLayoutRollout = 24 * time.Hour

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

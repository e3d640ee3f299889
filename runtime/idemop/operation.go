package idemop

import (
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Operation is the per-operation configuration that generated code declares
// once as a package-level value (from the spec's x-idempotent extension) and
// passes by pointer. Zero values mean the documented defaults: key header
// Idempotency-Key, key required, retention 24h, lock 30s, wait 0.
type Operation struct {
	// API is the identity of the API the operation belongs to, a part of
	// every storage key of its records, so that two services sharing one
	// store never answer each other's keys. Generated code sets it from
	// the spec (a slug of info.title, or x-idempotent's api); "" leaves it
	// out of the key, as before it existed. idem.WithAPI overrides it.
	API    string
	ID     string // operationId as oapi-codegen names it (the Go method name)
	Method string // HTTP method, upper case
	Path   string // path template from the spec, e.g. /pets/{petId}

	KeyHeader  string // header that carries the key; "" with KeyPointer set means body key
	KeyPointer string // JSON Pointer to a string member of the JSON body (Square style)
	Optional   bool   // true: a request without a key runs unprotected instead of 400

	// KeyPointers, with KeyHeader and KeyPointer empty, is a composite
	// body key: the values at these JSON Pointers (strings or numbers)
	// together are the key, as a webhook provider that sends no single id
	// is deduplicated (Adyen: pspReference and eventCode). See
	// [Operation.Provider].
	KeyPointers []string

	// Provider is the sender of a webhook or callback whose delivery or
	// event ids the operation's keys are ("" for an API operation). It is
	// part of every storage key of the operation's records (idemctl names
	// the operation ID@Provider), so that two senders' equal ids never
	// meet. Generated code sets it from x-idempotent's provider, by
	// default the webhook's or callback's name in the spec.
	Provider string

	Retention time.Duration // how long a completed result is replayed
	Lock      time.Duration // in-progress lease, extended by the heartbeat
	Wait      time.Duration // how long a duplicate waits for the original before 409

	FingerprintIgnore  []string // JSON Pointers removed from the body before hashing
	FingerprintHeaders []string // request headers included in the fingerprint

	// Final is the operation's storage policy: the answers that are final,
	// stored and replayed, as status codes ("500") and classes ("2xx").
	// nil means DefaultFinal (2xx, 3xx and 4xx). Transient takes statuses
	// back out of it: their lease is released and a retry runs again (a
	// 402 that a topped-up card should turn into a 201). The statuses of
	// NeverFinal (408, 409, 425, 429) are never stored; an error, no
	// answer, a panic or a cancellation always releases. See [CheckFinal].
	Final     []string
	Transient []int

	// Security lists the schemes the spec requires for the operation; an
	// engine for it refuses a key space shared by every caller unless told
	// (see idemgen.NewEngineFor). nil: the spec requires none.
	Security []Security
}

// Default values for the zero fields of [Operation] (and of
// [ClientOperation]'s key header).
const (
	DefaultKeyHeader = "Idempotency-Key"
	DefaultRetention = idemstore.DefaultRetention
	DefaultLock      = idemstore.DefaultLease
)

// Security is one security scheme that the spec requires for an
// operation: its own security requirement, else the document's. Generated
// code fills it in [Operation.Security]; an engine refuses to start with a
// shared key space for such an operation unless told to (see
// idemgen.NewEngineFor).
type Security struct {
	Scheme string // the scheme's name under components.securitySchemes
	Type   string // apiKey, http, oauth2, openIdConnect or mutualTLS
	In     string // apiKey: header, query or cookie
	Name   string // apiKey: the header, query parameter or cookie that carries it
}

package idem

import (
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// Operation is the per-operation configuration that generated code declares
// once as a package-level value (from the spec's x-idempotent extension) and
// passes by pointer; see [idemop.Operation], of which it is an alias.
type Operation = idemop.Operation

// Default values for the zero fields of [Operation], and the engine's.
const (
	DefaultKeyHeader       = idemop.DefaultKeyHeader
	DefaultRetention       = idemop.DefaultRetention
	DefaultLock            = idemop.DefaultLock
	DefaultBodyLimit       = 1 << 20                  // request body, bytes
	DefaultStoredBodyLimit = 1 << 20                  // stored response body, bytes
	DefaultStoreTimeout    = idemstore.DefaultTimeout // every store call, detached from the request
)

// MaxKeyLength is the longest idempotency key accepted, in bytes.
const MaxKeyLength = keyheader.MaxLength

// ErrInvalidKey is returned (wrapped) for a key that is empty, longer than
// MaxKeyLength, not printable ASCII, or a malformed sf-string.
var ErrInvalidKey = keyheader.ErrInvalid

// opKeyHeader returns op's header that carries the key, or "" for a body key.
func opKeyHeader(op *Operation) string {
	switch {
	case op.KeyHeader != "":
		return op.KeyHeader
	case op.KeyPointer != "" || len(op.KeyPointers) > 0:
		return ""
	default:
		return DefaultKeyHeader
	}
}

// opRetention returns op.Retention or its default.
func opRetention(op *Operation) time.Duration {
	if op.Retention > 0 {
		return op.Retention
	}
	return DefaultRetention
}

// opLock returns op.Lock or its default.
func opLock(op *Operation) time.Duration {
	if op.Lock > 0 {
		return op.Lock
	}
	return DefaultLock
}

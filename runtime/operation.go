package idem

import (
	"errors"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/keyheader"
)

// The engine's defaults, for the options that set them.
const (
	DefaultBodyLimit       = 1 << 20                  // request body, bytes
	DefaultStoredBodyLimit = 1 << 20                  // stored response body, bytes
	DefaultStoreTimeout    = idemstore.DefaultTimeout // every store call, detached from the request
)

// Limits on what the engine and the client accept.
const (
	// MaxKeyLength is the longest idempotency key accepted, in bytes.
	MaxKeyLength = keyheader.MaxLength
	// MinScopeSecret is the shortest secret [WithScopeSecret] accepts, in
	// bytes.
	MinScopeSecret = 16
)

// Errors about a key.
var (
	// ErrInvalidKey is returned (wrapped) for a key that is empty, longer
	// than MaxKeyLength, not printable ASCII, or a malformed sf-string.
	ErrInvalidKey = keyheader.ErrInvalid
	// ErrBodyKey is returned (wrapped) by a body-key operation's client
	// call when the key cannot be placed at the operation's KeyPointer:
	// the pointer is malformed, its parent is missing or not an object, or
	// the member is not a string.
	ErrBodyKey = errors.New("idem: cannot place the key in the body")
	// ErrBodyKeyDiffers is returned by a body-key operation's client call
	// when the body already carries a key that differs from the one given
	// with [WithKey].
	ErrBodyKeyDiffers = errors.New("idem: body key differs from the call's key")
)

// opKeyHeader returns op's header that carries the key, or "" for a body key.
func opKeyHeader(op *idemop.Operation) string {
	switch {
	case op.KeyHeader != "":
		return op.KeyHeader
	case op.KeyPointer != "" || len(op.KeyPointers) > 0:
		return ""
	default:
		return idemop.DefaultKeyHeader
	}
}

// opRetention returns op.Retention or its default.
func opRetention(op *idemop.Operation) time.Duration {
	if op.Retention > 0 {
		return op.Retention
	}
	return idemop.DefaultRetention
}

// opLock returns op.Lock or its default.
func opLock(op *idemop.Operation) time.Duration {
	if op.Lock > 0 {
		return op.Lock
	}
	return idemop.DefaultLock
}

package idem

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Info is what a handler running under the engine can learn of its request.
type Info struct {
	Key       string // the client's idempotency key, unquoted
	Operation string // the operation ID the key is scoped to
	Fence     int64  // fencing token, above every earlier run's of the key: 1 for a first run and +1 for every takeover, or, on an idemstore.TxStore, its claim's (pgstore: the transaction's id)
	Recovered bool   // a stale lease was taken over for this run
}

// infoKey is the context key under which the engine stores a request's
// *Info.
type infoKey struct{}

// FromContext returns the idempotency information of the request whose
// handler ctx belongs to. It reports false for a context that did not come
// from a protected run (no key, fail-open, or not under the engine at all).
func FromContext(ctx context.Context) (Info, bool) {
	if info, ok := idemstore.Value(ctx, infoKey{}).(*Info); ok {
		return *info, true
	}
	return Info{}, false
}

// withInfo returns a copy of ctx carrying info, which must not change
// afterwards. A pointer, such as to a lease's Info, is stored without
// allocating; FromContext returns copies.
func withInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// infoCtx is what withInfo returns, in a form a lease keeps for its
// handler's context (lease.run), which saves context.WithValue's allocation
// on every run. Like a context.WithValue, it answers every other key, and
// Deadline, Done and Err, from its parent, so the context package finds
// the parent's cancellation through it.
type infoCtx struct {
	context.Context
	info  *Info
	scope *runScope // the run's derived keys and steps (derive.go), or nil
}

// Value implements context.Context.
func (c *infoCtx) Value(key any) any {
	switch key.(type) {
	case infoKey:
		return c.info
	case runKey:
		if c.scope != nil {
			return c.scope
		}
	}
	return c.Context.Value(key)
}

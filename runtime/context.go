package idem

import "context"

// Info is what a handler running under the engine can learn of its request.
type Info struct {
	Key       string // the client's idempotency key, unquoted
	Operation string // the operation ID the key is scoped to
	Fence     int64  // fencing token: 1 for a first run, +1 for every takeover
	Recovered bool   // a stale lease was taken over for this run
}

// infoKey is the context key under which the engine stores a request's
// *Info.
type infoKey struct{}

// FromContext returns the idempotency information of the request whose
// handler ctx belongs to. It reports false for a context that did not come
// from a protected run (no key, fail-open, or not under the engine at all).
func FromContext(ctx context.Context) (Info, bool) {
	if info, ok := ctx.Value(infoKey{}).(*Info); ok {
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

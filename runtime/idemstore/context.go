package idemstore

import "context"

// RunContextKey is the string key under which a framework whose handler
// context does not reach the request's context keeps the context the
// engine gave the handler. gin is the one: oapi-codegen's gin servers hand
// the handler the *gin.Context itself, whose Value consults the request's
// context only when the gin engine's ContextWithFallback is set, and
// otherwise looks up string keys alone, in the gin.Context's own Keys. The
// gin adapter (idemgin) sets the handler's context under this key, so
// [Value] finds what the engine and the stores put there either way.
const RunContextKey = "github.com/idemgen/idemgen/runtime/idemstore.RunContext"

// Value returns ctx.Value(key) or, when ctx has none, the value under key
// of the context kept under [RunContextKey]. The engine's lookups
// (idem.FromContext, derived keys, steps) and the stores' transactions
// (pgstore.Tx, mysqlstore.Tx) go through it, so a handler finds them in
// whatever context its framework hands it.
func Value(ctx context.Context, key any) any {
	if v := ctx.Value(key); v != nil {
		return v
	}
	if inner, ok := ctx.Value(RunContextKey).(context.Context); ok && inner != ctx {
		return inner.Value(key)
	}
	return nil
}

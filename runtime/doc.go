// Package idem is the runtime behind idemgen's generated code: idempotency-key
// extraction and validation, request fingerprinting, the Redis Lua state
// machine, response capture and replay, RFC 9457 problem responses, and the
// client-side retry policy.
//
// Generated server wrappers call [Engine.Serve] (plain ServerInterface) and
// [Engine.ServeStrict] (strict server); generated client helpers call
// [Caller.Begin] and [Call.Run]. The same state machine is available by hand
// through [Engine.Middleware] for routes that are not generated and through
// [Do] for code that is not HTTP, such as a queue consumer.
package idem

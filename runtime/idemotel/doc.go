// Package idemotel turns the hooks of package idem into OpenTelemetry
// metrics and spans: [NewHooks] for the server engine ([idem.WithHooks]) and
// [NewAttemptHook] for the client ([idem.WithAttemptHook]). It depends on the
// OpenTelemetry API only; the application chooses the SDK and exporters, and
// without them the global no-op providers record nothing. Package idem does
// not import this one, so a program that does not use it links no
// OpenTelemetry.
//
// # Server
//
// Every instrument carries the operation ID (idem.operation) and other
// bounded attributes only: never a key, a key hash, a scope or a
// fingerprint.
//
//	idem.server.outcomes           counter    {outcome}  idem.operation, idem.outcome
//	idem.server.handler.duration   histogram  s          idem.operation, http.response.status_code, error.type
//	idem.store.duration            histogram  s          idem.operation, idem.store.call, idem.outcome (acquire), error.type
//
// idem.outcome takes the values of the Outcome constants. One request
// counts more than one outcome: a first run (first_run or recovered) then
// completed (or unreplicated), or released.
//
// Each store call is a span named after it (idem.acquire, idem.complete,
// idem.release, idem.extend) in the request's trace, a child of the span in
// the request's context, with the operation, the fence number (idem.fence),
// the outcome of an acquire and the status a completion stored. The
// store's own spans (go-redis's redisotel) are its children.
//
// # Client
//
//	idem.client.attempts           counter    {attempt}  idem.operation, http.response.status_code, idem.replayed, error.type
//	idem.client.attempt.duration   histogram  s          idem.operation, http.response.status_code, error.type
//	idem.client.retries            counter    {retry}    idem.operation, idem.retry.cause, http.response.status_code
//	idem.client.wait.duration      histogram  s          idem.operation, idem.retry_after
//	idem.client.give_ups           counter    {call}     idem.operation, idem.retry.cause, http.response.status_code
//
// idem.retry.cause is "status" (the server answered a retried status),
// "transport", "attempt_timeout" or "cancelled".
package idemotel

package idemop

// The wire contract: what the engine answers besides an operation's own
// answers, which the generator publishes (idemgen -emit-overlay) and
// idemctl probe checks.

// Stable problem codes, the "code" member of every problem the engine answers.
const (
	CodeMissingKey                 = "missing-key"                  // 400: the required key is absent
	CodeInvalidKey                 = "invalid-key"                  // 400: empty, too long, not printable ASCII, bad sf-string
	CodeBodyUnreadable             = "body-unreadable"              // 400: the request body could not be read
	CodePayloadTooLarge            = "payload-too-large"            // 413: the request body is over the limit
	CodeUnsupportedContentEncoding = "unsupported-content-encoding" // 415: the request body has a Content-Encoding
	CodeFingerprintMismatch        = "fingerprint-mismatch"         // 422: the key was used for another request
	CodeConflict                   = "conflict"                     // 409: the original request still runs
	CodeStoreUnavailable           = "store-unavailable"            // 503: the idempotency store is unreachable
	CodeStoreMisconfigured         = "store-misconfigured"          // 503: the store may lose records or denies the scripts
	CodeReconcileFailed            = "reconcile-failed"             // 503: the reconciler of a recovered lease failed
	CodeScopeFailed                = "scope-failed"                 // 500: the scope function failed
	CodeMissingCredential          = "missing-credential"           // 401: a secured operation's scope credential is absent or empty
	CodeRequestCancelled           = "request-cancelled"            // 503: the request ended before its handler answered
	CodeBadRequest                 = "bad-request"                  // 400: a parameter or body the generated router could not bind or decode
	CodeServerMisconfigured        = "server-misconfigured"         // 500: the strict server was built without its router step
	CodeStoreCompletionFailed      = "store-completion-failed"      // 503, or 500 when the store refused it: a run's result and writes could not be committed
	CodeTransactionEnded           = "transaction-ended"            // 500: the handler ended the run's transaction itself
)

// ProblemTypePrefix prefixes a problem code to form its "type" URI.
const ProblemTypePrefix = "urn:idemgen:problem:"

// ProblemContentType is the media type of problem responses (RFC 9457).
const ProblemContentType = "application/problem+json"

// Headers the engine sets on its answers.
const (
	HeaderReplayed    = "Idempotent-Replayed"      // "true" on a replayed response
	HeaderBodyOmitted = "Idempotency-Body-Omitted" // "true" on a replay whose body was too large to store
	HeaderDegraded    = "Idempotency-Degraded"     // "true" when fail-open ran without protection
)

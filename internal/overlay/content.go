package overlay

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// Names and limits the runtime (package idem) and the design fix.
const (
	defaultKeyHeader = "Idempotency-Key"
	defaultRetention = 24 * time.Hour
	maxKeyLength     = 255

	replayedHeader    = "Idempotent-Replayed"
	retryAfterHeader  = "Retry-After"
	problemMediaType  = "application/problem+json"
	problemSchemaBase = "IdempotencyProblem"
)

// errorResponse is one response the idempotency layer answers by itself.
type errorResponse struct {
	status     string
	text       string   // the response's description, without the codes
	codes      []string // the problem codes it carries
	retryAfter bool     // whether it carries Retry-After
}

// errorResponses returns the responses the idempotency layer can answer for
// op, in status order: the runtime's codes, missing-key only when the key is
// required, bad-request for what the generated router and strict handler
// cannot bind or decode (IdempotencyErrorHandler). The 500s (scope-failed,
// server-misconfigured, transaction-ended, and store-completion-failed when
// the store refused the result for how it is set up) are faults of the
// server, not part of the contract.
func errorResponses(op Operation) []errorResponse {
	badKey := []string{idemop.CodeMissingKey, idemop.CodeInvalidKey, idemop.CodeBodyUnreadable, idemop.CodeBadRequest}
	badKeyText := "The idempotency key is missing or malformed, or the request could not be read or decoded."
	if op.Optional {
		badKey = badKey[1:]
		badKeyText = "The idempotency key is malformed, or the request could not be read or decoded."
	}
	return []errorResponse{
		{status: "400", text: badKeyText, codes: badKey},
		{
			status:     "409",
			text:       "A request with the same idempotency key is still being processed. Retry this request, with the same key, after Retry-After seconds.",
			codes:      []string{idemop.CodeConflict},
			retryAfter: true,
		},
		{
			status: "413",
			text:   "The request body is larger than the idempotency layer accepts.",
			codes:  []string{idemop.CodePayloadTooLarge},
		},
		{
			status: "415",
			text:   "The request body has a Content-Encoding; the idempotency layer takes it unencoded.",
			codes:  []string{idemop.CodeUnsupportedContentEncoding},
		},
		{
			status: "422",
			text:   "The idempotency key was already used for a different request. Do not retry: send this request with a new key.",
			codes:  []string{idemop.CodeFingerprintMismatch},
		},
		{
			status:     "503",
			text:       "The idempotency store is unavailable or misconfigured, an interrupted earlier attempt could not be reconciled, or the result could not be stored with the operation's own writes (which were rolled back), so no result was kept. Retry this request, with the same key, after Retry-After seconds.",
			codes:      []string{idemop.CodeStoreUnavailable, idemop.CodeStoreMisconfigured, idemop.CodeReconcileFailed, idemop.CodeRequestCancelled, idemop.CodeStoreCompletionFailed},
			retryAfter: true,
		},
	}
}

// problemCodes lists every code of the responses above, the enum of the
// problem schema's code member, and missing-credential: its 401 depends on
// the server's options (idem.WithScopeFromHeader), not on the spec, so no
// response declares it, but a client may meet it.
func problemCodes() []string {
	var codes []string
	for _, r := range errorResponses(Operation{}) {
		codes = append(codes, r.codes...)
	}
	return append(codes, idemop.CodeMissingCredential)
}

// problemSchema is the RFC 9457 problem detail the idempotency layer
// answers, to be named name in components/schemas. x-enum-varnames gives
// oapi-codegen's constants for the codes the Go type's prefix
// (IdempotencyProblemCodeConflict rather than a bare Conflict that user code
// could well declare too).
func problemSchema(name string) object {
	codes := problemCodes()
	varNames := make([]string, len(codes))
	for i, c := range codes {
		varNames[i] = name + "Code" + camel(c)
	}
	str := func(desc string) object { return object{}.set("type", "string").set("description", desc) }
	return object{}.
		set("type", "object").
		set("description", "An RFC 9457 problem detail answered by the idempotency layer.").
		set("required", []string{"type", "title", "status", "detail", "code"}).
		set("properties", object{}.
			set("type", str("A URI reference that identifies the problem type.")).
			set("title", str("A short summary of the problem type.")).
			set("status", object{}.set("type", "integer").set("description", "The HTTP status code.")).
			set("detail", str("An explanation specific to this occurrence of the problem.")).
			set("code", object{}.
				set("type", "string").
				set("description", "A stable, machine-readable problem code.").
				set("enum", codes).
				set("x-enum-varnames", varNames)))
}

// camel writes a problem code in Go's camel case: missing-key is MissingKey.
func camel(code string) string {
	var b strings.Builder
	for _, part := range strings.Split(code, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// response is the response object of r, whose body is the schema named
// schema in components/schemas.
func (r errorResponse) response(schema string) object {
	list := make([]string, len(r.codes))
	for i, c := range r.codes {
		list[i] = "`" + c + "`"
	}
	noun := "Problem code"
	if len(list) > 1 {
		noun += "s"
	}
	resp := object{}.set("description", fmt.Sprintf("%s %s: %s.", r.text, noun, strings.Join(list, ", ")))
	if r.retryAfter {
		resp = resp.set("headers", object{}.set(retryAfterHeader, retryAfter()))
	}
	return resp.set("content", object{}.set(problemMediaType, object{}.
		set("schema", object{}.set("$ref", "#/components/schemas/"+schema))))
}

// retryAfter is the Retry-After header of 409 and 503.
func retryAfter() object {
	return object{}.
		set("description", "Seconds to wait before retrying this request with the same idempotency key.").
		set("schema", object{}.set("type", "integer").set("minimum", 1))
}

// replayed is the Idempotent-Replayed header of responses that can be replayed.
func replayed() object {
	return object{}.
		set("description", "Present, with the value true, when this response is a replay: the stored result of an earlier request with the same idempotency key.").
		set("schema", object{}.set("type", "string").set("enum", []string{"true"}))
}

// keyParameter is the header parameter that carries op's key.
func keyParameter(op Operation) object {
	desc := fmt.Sprintf("A unique key chosen by the client for this request and sent again, unchanged, on every retry of it. Results are replayed for %s.", humanDuration(op.Retention))
	if op.Webhook != "" || op.Callback != nil {
		desc = fmt.Sprintf("The delivery id of this event, chosen by the sender and sent again, unchanged, on every redelivery of it. Answers are replayed for %s.", humanDuration(op.Retention))
	}
	if op.Optional {
		desc += " Without a key the request is processed without idempotency protection."
	}
	return object{}.
		set("name", op.KeyHeader).
		set("in", "header").
		set("required", !op.Optional).
		set("description", desc).
		set("schema", object{}.set("type", "string").set("minLength", 1).set("maxLength", maxKeyLength))
}

// paragraph is the text appended to op's description.
func paragraph(op Operation) string {
	if op.Webhook != "" || op.Callback != nil {
		return eventParagraph(op)
	}
	var first string
	switch {
	case op.KeyPointer != "" && op.Optional:
		first = fmt.Sprintf("Idempotency: the request body member `%s` (a JSON Pointer) may carry a unique key; without one the request runs unprotected. Reuse the key, unchanged, on every retry of this request.", op.KeyPointer)
	case op.KeyPointer != "":
		first = fmt.Sprintf("Idempotency: put a unique key in the request body member `%s` (a JSON Pointer) and reuse it, unchanged, on every retry of this request.", op.KeyPointer)
	case op.Optional:
		first = fmt.Sprintf("Idempotency: the request may carry a unique `%s` header; without one it runs unprotected. Reuse the key, unchanged, on every retry of this request.", op.KeyHeader)
	default:
		first = fmt.Sprintf("Idempotency: send a unique `%s` header and reuse it, unchanged, on every retry of this request.", op.KeyHeader)
	}
	return first + fmt.Sprintf(" The first completed result is kept for %s: a retry with the same key gets that result again, marked `%s: true`, instead of running the operation a second time. While the first request is still being processed a retry gets 409 with `%s`; a key reused for a different request gets 422.",
		humanDuration(op.Retention), replayedHeader, retryAfterHeader) + op.policySentence()
}

// policySentence says which answers op keeps, when its storage policy is
// not the default; "" otherwise.
func (op Operation) policySentence() string {
	if op.Final == nil && op.Transient == nil {
		return ""
	}
	final := op.Final
	if final == nil {
		final = idemop.DefaultFinal()
	}
	except := slices.Concat(op.Transient, idemop.NeverFinal())
	slices.Sort(except)
	except = slices.Compact(except)
	var out []string
	for _, n := range except {
		if slices.Contains(final, strconv.Itoa(n/100)+"xx") { // an exception to a class final names
			out = append(out, strconv.Itoa(n))
		}
	}
	s := " Only answers with status " + strings.Join(final, ", ")
	if len(out) > 0 {
		s += " (except " + strings.Join(out, ", ") + ")"
	}
	return s + " are kept; after any other answer a retry with the same key runs the operation again."
}

// appendParagraph returns desc, unchanged, followed by a blank line and para.
func appendParagraph(desc, para string) string {
	switch {
	case desc == "":
		return para
	case strings.HasSuffix(desc, "\n\n"):
		return desc + para
	case strings.HasSuffix(desc, "\n"):
		return desc + "\n" + para
	default:
		return desc + "\n\n" + para
	}
}

// humanDuration writes d the way x-idempotent is written: 24h, 1h30m, 90s
// as 1m30s, 500ms.
func humanDuration(d time.Duration) string {
	if d <= 0 || d%time.Millisecond != 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// eventParagraph is paragraph for a webhook's or callback's operation: the
// receiver's contract, as its sender reads it.
func eventParagraph(op Operation) string {
	var first string
	switch {
	case len(op.KeyPointers) > 0:
		first = fmt.Sprintf("Idempotency: the receiver deduplicates deliveries by the request body members %s (JSON Pointers) together; a redelivery of an event carries them unchanged.", "`"+strings.Join(op.KeyPointers, "` and `")+"`")
	case op.KeyPointer != "":
		first = fmt.Sprintf("Idempotency: the receiver deduplicates deliveries by the request body member `%s` (a JSON Pointer), the event's id; a redelivery carries it unchanged.", op.KeyPointer)
	default:
		first = fmt.Sprintf("Idempotency: the receiver deduplicates deliveries by the `%s` header, the event's delivery id; send it, unchanged, with every redelivery of the event.", op.KeyHeader)
	}
	if op.Optional {
		first += " A delivery without one is processed without protection."
	}
	return first + fmt.Sprintf(" The first answer of 2xx or 4xx is kept for %s: a redelivery gets it again, marked `%s: true`, and the event is processed once. A 5xx is not kept, so a redelivery after it is processed again. While the first delivery is still being processed a redelivery gets 409 with `%s`; an id reused for a different payload gets 422.",
		humanDuration(op.Retention), replayedHeader, retryAfterHeader)
}

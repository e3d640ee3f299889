// Package extension parses and validates the x-idempotent OpenAPI extension.
//
// The extension appears on an operation (true, false or an object) and at
// document level (an object of defaults for every operation that opts in).
// Values arrive as kin-openapi decodes them: JSON types (bool, float64,
// string, []any, map[string]any). Parsing checks each field on its own;
// [Resolve] merges document defaults with an operation's values, fills in
// the documented defaults and checks the fields against each other.
package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemgen/idemgen/internal/errtree"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// Name is the name of the extension in an OpenAPI document.
const Name = "x-idempotent"

// Spec is one x-idempotent object as written: nil or empty fields were not
// given. A list that was given but empty is non-nil.
type Spec struct {
	// API is the document-level api: the API's identity in storage keys,
	// in place of the one derived from info.title ("" leaves it out).
	API *string
	Key *Key
	// Provider names the sender of a webhook or callback whose ids its
	// keys are; allowed on webhook and callback operations only.
	Provider    *string
	Required    *bool
	Retention   *time.Duration
	Lock        *time.Duration
	Wait        *time.Duration
	Fingerprint *Fingerprint
	Retry       *Retry
	// Final and Transient are the storage policy (idemop.Operation's fields
	// of those names): nil when not given.
	Final     []string
	Transient []int
}

// Key says where the idempotency key is: exactly one field is set.
type Key struct {
	Header string // HTTP header name
	Body   string // JSON Pointer into the JSON request body
	// Composite lists two or more JSON Pointers whose values together are
	// the key (key.body given as a list: a webhook provider's pspReference
	// and eventCode).
	Composite []string
}

// Fingerprint lists what is left out of, or added to, the request fingerprint.
type Fingerprint struct {
	Ignore  []string // JSON Pointers removed from the body before hashing
	Headers []string // request headers that are part of the fingerprint
}

// Retry holds the defaults of the generated client helper.
type Retry struct {
	MaxAttempts     *int
	InitialInterval *time.Duration
	MaxInterval     *time.Duration
	Multiplier      *float64
	MaxElapsed      *time.Duration
	AttemptTimeout  *time.Duration
	RetryOn         []int
}

// Error is a problem with one field of the extension. Field is the path
// below x-idempotent ("lock", "retry.retryOn[2]"), empty for the extension
// value itself.
type Error struct {
	Field string
	Msg   string
}

// Error returns "x-idempotent.field: msg".
func (e *Error) Error() string {
	if e.Field == "" {
		return Name + ": " + e.Msg
	}
	return Name + "." + e.Field + ": " + e.Msg
}

func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fieldNames are the members of an x-idempotent object, in the order the
// documentation lists them.
var fieldNames = []string{"key", "provider", "required", "retention", "lock", "wait", "final", "transient", "fingerprint", "retry"}

// documentFields are the members of the document-level x-idempotent: api
// and the operation's fields but provider (each webhook's own).
var documentFields = append([]string{"api"}, slices.DeleteFunc(slices.Clone(fieldNames), func(f string) bool { return f == "provider" })...)

// The members of x-idempotent's key, fingerprint and retry objects.
var (
	keyFields         = []string{"header", "body"}
	fingerprintFields = []string{"ignore", "headers"}
	retryFields       = []string{"maxAttempts", "initialInterval", "maxInterval", "multiplier", "maxElapsed", "attemptTimeout", "retryOn"}
)

// Errors returns the problems that err holds, one *Error each: ParseOperation,
// ParseDocument and Resolve report every problem they find, joined.
func Errors(err error) []*Error {
	var out []*Error
	for _, leaf := range errtree.Leaves(err) {
		var e *Error
		if errors.As(leaf, &e) {
			out = append(out, e)
		}
	}
	return out
}

// problems collects the errors of one parse, so that one run reports every
// problem of the extension rather than the first.
type problems []error

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, errorf(field, format, args...))
}

func (p *problems) err() error { return errors.Join(*p...) }

// ParseOperation parses the value of x-idempotent on an operation. enabled
// is false for an explicit opt-out (false); an object or true enables it.
// The error joins every problem found, each an *Error (see Errors).
func ParseOperation(v any) (enabled bool, s Spec, err error) {
	switch v := v.(type) {
	case bool:
		return v, Spec{}, nil
	case map[string]any:
		var p problems
		if _, ok := v["api"]; ok {
			p.add("api", "is allowed at document level only: an API has one identity in storage keys")
			v = maps.Clone(v)
			delete(v, "api")
		}
		s := parseObject(&p, v, fieldNames)
		return len(p) == 0, s, p.err()
	default:
		return false, Spec{}, errorf("", "must be true, false (explicit opt-out) or an object, got %s", describe(v))
	}
}

// ParseDocument parses the document-level x-idempotent: an object of
// defaults for the operations that opt in, and the API's identity (api).
// The error joins every problem found, each an *Error.
func ParseDocument(v any) (Spec, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Spec{}, errorf("", "must be an object of defaults (api, key, required, retention, lock, wait, final, transient, fingerprint, retry) at document level, got %s", describe(v))
	}
	var p problems
	api, hasAPI := m["api"]
	if hasAPI {
		m = maps.Clone(m)
		delete(m, "api")
	}
	if _, ok := m["provider"]; ok {
		p.add("provider", "is allowed on webhook and callback operations only: each names the sender of its own deliveries")
		m = maps.Clone(m)
		delete(m, "provider")
	}
	s := parseObject(&p, m, documentFields)
	if hasAPI {
		s.API = parseAPI(&p, api)
	}
	return s, p.err()
}

// MaxAPILength is the longest api accepted, in bytes: it is part of every
// storage key.
const MaxAPILength = 32

// parseAPI checks the document-level api: "", or up to MaxAPILength
// letters, digits, '-', '_' and '.'.
func parseAPI(p *problems, v any) *string {
	s, ok := v.(string)
	if !ok {
		p.add("api", "must be a short name such as orders-api, got %s", describe(v))
		return nil
	}
	if len(s) > MaxAPILength {
		p.add("api", "%q is %d bytes long; it is part of every storage key, so use at most %d", s, len(s), MaxAPILength)
		return nil
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAPIByte(c) {
			p.add("api", "%q has %q at byte %d; use letters, digits, '-', '_' and '.'", s, c, i)
			return nil
		}
	}
	return &s
}

// isAPIByte reports whether c may appear in an api.
func isAPIByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// APIFromTitle is the API identity of a spec whose document-level
// x-idempotent sets no api: its info.title in lower case, each run of other
// characters than letters and digits one '-', at most MaxAPILength bytes
// (a longer one keeps its first 25 and a 6-character hash of the whole
// title, so that titles differing only at the end still differ). A title
// with no letter or digit gives "api-" and its hash.
func APIFromTitle(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r < 128 && isAPIByte(byte(r)) && r != '-' && r != '_' && r != '.' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	slug := b.String()
	sum := sha256.Sum256([]byte(title))
	hash := hex.EncodeToString(sum[:3])
	switch {
	case slug == "":
		return "api-" + hash
	case len(slug) > MaxAPILength:
		return strings.TrimRight(slug[:MaxAPILength-len(hash)-1], "-") + "-" + hash
	}
	return slug
}

// parseObject parses the fields of an x-idempotent object; known are the
// fields the place allows (fieldNames or documentFields), which an unknown
// field's message lists.
func parseObject(p *problems, m map[string]any, known []string) Spec {
	checkFields(p, "", m, known)
	var s Spec
	if v, ok := m["key"]; ok {
		s.Key = parseKey(p, v)
	}
	if v, ok := m["provider"]; ok {
		s.Provider = parseProvider(p, v)
	}
	if v, ok := m["required"]; ok {
		if b, ok := v.(bool); ok {
			s.Required = &b
		} else {
			p.add("required", "must be true or false, got %s", describe(v))
		}
	}
	for _, d := range []struct {
		name     string
		dst      **time.Duration
		positive bool
	}{
		{"retention", &s.Retention, true},
		{"lock", &s.Lock, true},
		{"wait", &s.Wait, false},
	} {
		if v, ok := m[d.name]; ok {
			*d.dst = parseDuration(p, d.name, v, d.positive)
		}
	}
	if v, ok := m["final"]; ok {
		s.Final = parseFinal(p, v)
	}
	if v, ok := m["transient"]; ok {
		s.Transient = parseTransient(p, v)
	}
	if v, ok := m["fingerprint"]; ok {
		s.Fingerprint = parseFingerprint(p, v)
	}
	if v, ok := m["retry"]; ok {
		s.Retry = parseRetry(p, v)
	}
	return s
}

func parseKey(p *problems, v any) *Key {
	m, ok := v.(map[string]any)
	if !ok {
		p.add("key", "must be an object with header (e.g. Idempotency-Key) or body (a JSON Pointer such as /idempotency_key), got %s", describe(v))
		return nil
	}
	checkFields(p, "key", m, keyFields)
	hv, hasHeader := m["header"]
	bv, hasBody := m["body"]
	switch {
	case hasHeader && hasBody:
		p.add("key", "set header or body, not both")
	case hasHeader:
		h, ok := hv.(string)
		if !ok {
			p.add("key.header", "must be a header name such as Idempotency-Key, got %s", describe(hv))
			return nil
		}
		if checkHeaderName(p, "key.header", h) {
			return &Key{Header: h}
		}
	case hasBody:
		if list, ok := bv.([]any); ok {
			return parseCompositeKey(p, list)
		}
		ptr, ok := bv.(string)
		if !ok {
			p.add("key.body", "must be a JSON Pointer such as /idempotency_key, or a list of them whose values together are the key, got %s", describe(bv))
			return nil
		}
		if checkPointer(p, "key.body", ptr) {
			return &Key{Body: ptr}
		}
	default:
		p.add("key", "must set header (e.g. Idempotency-Key) or body (a JSON Pointer such as /idempotency_key)")
	}
	return nil
}

// parseCompositeKey parses key.body given as a list: one pointer is a plain
// body key, two or more a composite one.
func parseCompositeKey(p *problems, list []any) *Key {
	ptrs := parseStrings(p, "key.body", list, "JSON Pointers such as /pspReference", checkPointer)
	switch {
	case len(ptrs) != len(list):
		return nil // reported
	case len(ptrs) == 0:
		p.add("key.body", "must list at least one JSON Pointer")
		return nil
	case len(ptrs) == 1:
		return &Key{Body: ptrs[0]}
	}
	return &Key{Composite: ptrs}
}

// parseProvider checks provider: like api, up to MaxAPILength letters,
// digits, '-', '_' and '.', but not empty.
func parseProvider(p *problems, v any) *string {
	s, ok := v.(string)
	if !ok || s == "" || len(s) > MaxAPILength || strings.IndexFunc(s, func(r rune) bool { return r >= 128 || !isAPIByte(byte(r)) }) >= 0 {
		p.add("provider", "must be a short name such as stripe (up to %d letters, digits, '-', '_' and '.'), got %s", MaxAPILength, describe(v))
		return nil
	}
	return &s
}

func parseFingerprint(p *problems, v any) *Fingerprint {
	m, ok := v.(map[string]any)
	if !ok {
		p.add("fingerprint", "must be an object with ignore and/or headers, got %s", describe(v))
		return nil
	}
	checkFields(p, "fingerprint", m, fingerprintFields)
	var f Fingerprint
	if v, ok := m["ignore"]; ok {
		f.Ignore = parseStrings(p, "fingerprint.ignore", v, "JSON Pointers such as /metadata/trace_id", checkPointer)
	}
	if v, ok := m["headers"]; ok {
		f.Headers = parseStrings(p, "fingerprint.headers", v, "header names such as X-Account-Id", checkHeaderName)
	}
	return &f
}

func parseRetry(p *problems, v any) *Retry {
	m, ok := v.(map[string]any)
	if !ok {
		p.add("retry", "must be an object (maxAttempts, initialInterval, maxInterval, multiplier, maxElapsed, attemptTimeout, retryOn), got %s", describe(v))
		return nil
	}
	checkFields(p, "retry", m, retryFields)
	var r Retry
	if v, ok := m["maxAttempts"]; ok {
		if n, ok := integer(v); ok && n >= 1 {
			r.MaxAttempts = &n
		} else {
			p.add("retry.maxAttempts", "must be an integer of at least 1, got %s", describe(v))
		}
	}
	for _, d := range []struct {
		name string
		dst  **time.Duration
	}{
		{"initialInterval", &r.InitialInterval},
		{"maxInterval", &r.MaxInterval},
		{"maxElapsed", &r.MaxElapsed},
		{"attemptTimeout", &r.AttemptTimeout},
	} {
		if v, ok := m[d.name]; ok {
			*d.dst = parseDuration(p, "retry."+d.name, v, true)
		}
	}
	if v, ok := m["multiplier"]; ok {
		if f, ok := v.(float64); ok && f >= 1 && f <= 100 {
			r.Multiplier = &f
		} else {
			p.add("retry.multiplier", "must be a number from 1 to 100, got %s", describe(v))
		}
	}
	if v, ok := m["retryOn"]; ok {
		r.RetryOn = parseRetryOn(p, v)
	}
	return &r
}

// parseRetryOn parses the statuses the client helper retries. Which
// statuses can be retried is the runtime's rule (idemop.RetryPolicy.Validate),
// applied to each status on its own so that the error names it.
func parseRetryOn(p *problems, v any) []int {
	list, ok := v.([]any)
	if !ok {
		p.add("retry.retryOn", "must be a list of HTTP status codes such as [409, 429, 503], got %s", describe(v))
		return nil
	}
	out := make([]int, 0, len(list))
	for i, e := range list {
		field := fmt.Sprintf("retry.retryOn[%d]", i)
		n, ok := integer(e)
		switch {
		case !ok || n < 100 || n > 599:
			p.add(field, "must be an HTTP status code from 100 to 599, got %s", describe(e))
		case slices.Contains(out, n):
			p.add(field, "%d is listed twice", n)
		default:
			if err := (idemop.RetryPolicy{RetryOn: []int{n}}).Validate(); err != nil {
				p.add(field, "the runtime refuses it (%v): the generated client would fail every call", err)
				continue
			}
			out = append(out, n)
		}
	}
	return out
}

// parseFinal parses final, the statuses whose answers are stored: status
// codes (500, unquoted in YAML) and classes (2xx). Whether each is allowed
// is the runtime's rule, idemop.CheckFinal, which Resolve applies to the
// merged policy.
func parseFinal(p *problems, v any) []string {
	list, ok := v.([]any)
	if !ok {
		p.add("final", "must be a list of status codes and classes such as [2xx, 4xx, 500], got %s", describe(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		if n, ok := integer(e); ok {
			out = append(out, strconv.Itoa(n))
			continue
		}
		s, ok := e.(string)
		if !ok {
			p.add(fmt.Sprintf("final[%d]", i), "must be a status code (500) or a class (2xx), got %s", describe(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

// parseTransient parses transient, the statuses taken out of final.
func parseTransient(p *problems, v any) []int {
	list, ok := v.([]any)
	if !ok {
		p.add("transient", "must be a list of HTTP status codes such as [402], got %s", describe(v))
		return nil
	}
	out := make([]int, 0, len(list))
	for i, e := range list {
		n, ok := integer(e)
		if !ok {
			p.add(fmt.Sprintf("transient[%d]", i), "must be an HTTP status code such as 402, got %s", describe(e))
			continue
		}
		out = append(out, n)
	}
	return out
}

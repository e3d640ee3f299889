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
	"fmt"
	"time"
)

// Name is the name of the extension in an OpenAPI document.
const Name = "x-idempotent"

// Spec is one x-idempotent object as written: nil or empty fields were not
// given. A list that was given but empty is non-nil.
type Spec struct {
	Key         *Key
	Required    *bool
	Retention   *time.Duration
	Lock        *time.Duration
	Wait        *time.Duration
	Fingerprint *Fingerprint
	Retry       *Retry
}

// Key says where the idempotency key is: exactly one field is set.
type Key struct {
	Header string // HTTP header name
	Body   string // JSON Pointer into the JSON request body
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
var fieldNames = []string{"key", "required", "retention", "lock", "wait", "fingerprint", "retry"}

// ParseOperation parses the value of x-idempotent on an operation. enabled
// is false for an explicit opt-out (false); an object or true enables it.
func ParseOperation(v any) (enabled bool, s Spec, err error) {
	switch v := v.(type) {
	case bool:
		return v, Spec{}, nil
	case map[string]any:
		s, err := parseObject(v)
		return err == nil, s, err
	default:
		return false, Spec{}, errorf("", "must be true, false (explicit opt-out) or an object, got %s", describe(v))
	}
}

// ParseDocument parses the document-level x-idempotent: an object of
// defaults for the operations that opt in.
func ParseDocument(v any) (Spec, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Spec{}, errorf("", "must be an object of defaults (key, required, retention, lock, wait, fingerprint, retry) at document level, got %s", describe(v))
	}
	return parseObject(m)
}

func parseObject(m map[string]any) (Spec, error) {
	if err := checkFields("", m, fieldNames); err != nil {
		return Spec{}, err
	}
	var s Spec
	var err error
	if v, ok := m["key"]; ok {
		if s.Key, err = parseKey(v); err != nil {
			return Spec{}, err
		}
	}
	if v, ok := m["required"]; ok {
		b, ok := v.(bool)
		if !ok {
			return Spec{}, errorf("required", "must be true or false, got %s", describe(v))
		}
		s.Required = &b
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
			if *d.dst, err = parseDuration(d.name, v, d.positive); err != nil {
				return Spec{}, err
			}
		}
	}
	if v, ok := m["fingerprint"]; ok {
		if s.Fingerprint, err = parseFingerprint(v); err != nil {
			return Spec{}, err
		}
	}
	if v, ok := m["retry"]; ok {
		if s.Retry, err = parseRetry(v); err != nil {
			return Spec{}, err
		}
	}
	return s, nil
}

func parseKey(v any) (*Key, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf("key", "must be an object with header (e.g. Idempotency-Key) or body (a JSON Pointer such as /idempotency_key), got %s", describe(v))
	}
	if err := checkFields("key", m, []string{"header", "body"}); err != nil {
		return nil, err
	}
	hv, hasHeader := m["header"]
	bv, hasBody := m["body"]
	switch {
	case hasHeader && hasBody:
		return nil, errorf("key", "set header or body, not both")
	case hasHeader:
		h, ok := hv.(string)
		if !ok {
			return nil, errorf("key.header", "must be a header name such as Idempotency-Key, got %s", describe(hv))
		}
		if err := checkHeaderName("key.header", h); err != nil {
			return nil, err
		}
		return &Key{Header: h}, nil
	case hasBody:
		p, ok := bv.(string)
		if !ok {
			return nil, errorf("key.body", "must be a JSON Pointer such as /idempotency_key, got %s", describe(bv))
		}
		if err := checkPointer("key.body", p); err != nil {
			return nil, err
		}
		return &Key{Body: p}, nil
	default:
		return nil, errorf("key", "must set header (e.g. Idempotency-Key) or body (a JSON Pointer such as /idempotency_key)")
	}
}

func parseFingerprint(v any) (*Fingerprint, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf("fingerprint", "must be an object with ignore and/or headers, got %s", describe(v))
	}
	if err := checkFields("fingerprint", m, []string{"ignore", "headers"}); err != nil {
		return nil, err
	}
	var f Fingerprint
	var err error
	if v, ok := m["ignore"]; ok {
		if f.Ignore, err = parseStrings("fingerprint.ignore", v, "JSON Pointers such as /metadata/trace_id", checkPointer); err != nil {
			return nil, err
		}
	}
	if v, ok := m["headers"]; ok {
		if f.Headers, err = parseStrings("fingerprint.headers", v, "header names such as X-Account-Id", checkHeaderName); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

func parseRetry(v any) (*Retry, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf("retry", "must be an object (maxAttempts, initialInterval, maxInterval, multiplier, maxElapsed, attemptTimeout, retryOn), got %s", describe(v))
	}
	if err := checkFields("retry", m, []string{"maxAttempts", "initialInterval", "maxInterval", "multiplier", "maxElapsed", "attemptTimeout", "retryOn"}); err != nil {
		return nil, err
	}
	var r Retry
	var err error
	if v, ok := m["maxAttempts"]; ok {
		n, ok := integer(v)
		if !ok || n < 1 {
			return nil, errorf("retry.maxAttempts", "must be an integer of at least 1, got %s", describe(v))
		}
		r.MaxAttempts = &n
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
			if *d.dst, err = parseDuration("retry."+d.name, v, true); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := m["multiplier"]; ok {
		f, ok := v.(float64)
		if !ok || !(f >= 1 && f <= 100) {
			return nil, errorf("retry.multiplier", "must be a number from 1 to 100, got %s", describe(v))
		}
		r.Multiplier = &f
	}
	if v, ok := m["retryOn"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nil, errorf("retry.retryOn", "must be a list of HTTP status codes such as [409, 429, 503], got %s", describe(v))
		}
		r.RetryOn = make([]int, 0, len(list))
		seen := map[int]bool{}
		for i, e := range list {
			n, ok := integer(e)
			if !ok || n < 100 || n > 599 {
				return nil, errorf(fmt.Sprintf("retry.retryOn[%d]", i), "must be an HTTP status code from 100 to 599, got %s", describe(e))
			}
			if seen[n] {
				return nil, errorf(fmt.Sprintf("retry.retryOn[%d]", i), "%d is listed twice", n)
			}
			seen[n] = true
			r.RetryOn = append(r.RetryOn, n)
		}
	}
	return &r, nil
}

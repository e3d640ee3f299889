package extension

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// checkFields reports the first member of m (in sorted order) that is not
// one of known.
func checkFields(field string, m map[string]any, known []string) error {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			return errorf(join(field, name), "unknown field; valid fields are %s", strings.Join(known, ", "))
		}
	}
	return nil
}

func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

// describe names the JSON type of v, and its value when short, for messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return "string " + strconv.Quote(v)
	case float64:
		return "number " + strconv.FormatFloat(v, 'g', -1, 64)
	case int:
		return "number " + strconv.Itoa(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// integer returns v as an int when it is a whole JSON number.
func integer(v any) (int, bool) {
	switch v := v.(type) {
	case float64:
		if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
			return 0, false
		}
		return int(v), true
	case int:
		return v, true
	default:
		return 0, false
	}
}

// parseDuration parses a Go duration string. The number 0 is accepted as a
// zero duration, for wait: 0.
func parseDuration(field string, v any, positive bool) (*time.Duration, error) {
	var d time.Duration
	switch v := v.(type) {
	case string:
		var err error
		d, err = time.ParseDuration(v)
		if err != nil {
			return nil, errorf(field, "%s is not a duration: use a Go duration such as \"30s\", \"5m\" or \"24h\"", strconv.Quote(v))
		}
	default:
		if n, ok := integer(v); !ok || n != 0 {
			return nil, errorf(field, "must be a duration string such as \"30s\", got %s", describe(v))
		}
	}
	switch {
	case positive && d <= 0:
		return nil, errorf(field, "must be positive, got %s", describe(v))
	case d < 0:
		return nil, errorf(field, "must not be negative, got %s", describe(v))
	}
	return &d, nil
}

// parseStrings parses a list of strings, each checked by check, with no
// duplicates (header names compare case-insensitively).
func parseStrings(field string, v any, what string, check func(field, s string) error) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errorf(field, "must be a list of %s, got %s", what, describe(v))
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := e.(string)
		if !ok {
			return nil, errorf(f, "must be one of %s, got %s", what, describe(e))
		}
		if err := check(f, s); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, s) }) {
			return nil, errorf(f, "%s is listed twice", strconv.Quote(s))
		}
		out = append(out, s)
	}
	return out, nil
}

// checkHeaderName checks that s is an HTTP field name (RFC 9110 token).
func checkHeaderName(field, s string) error {
	if s == "" {
		return errorf(field, "must not be empty: use a header name such as Idempotency-Key")
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return errorf(field, "%s is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", strconv.Quote(s))
		}
	}
	return nil
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkPointer checks that s is a JSON Pointer (RFC 6901) to a member, not
// the whole document.
func checkPointer(field, s string) error {
	if !strings.HasPrefix(s, "/") {
		return errorf(field, "%s is not a JSON Pointer: it must start with \"/\" (e.g. \"/idempotency_key\")", strconv.Quote(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
			return errorf(field, "%s is not a JSON Pointer: \"~\" must be followed by 0 or 1 (\"~0\" is \"~\", \"~1\" is \"/\")", strconv.Quote(s))
		}
	}
	return nil
}

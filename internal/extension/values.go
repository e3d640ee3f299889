package extension

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// checkFields reports every member of m (in sorted order) that is not one of
// known.
func checkFields(p *problems, field string, m map[string]any, known []string) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			p.add(join(field, name), "unknown field; valid fields are %s", strings.Join(known, ", "))
		}
	}
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

// parseDuration parses a Go duration string; nil when it is not one. The
// number 0 is accepted as a zero duration, for wait: 0.
func parseDuration(p *problems, field string, v any, positive bool) *time.Duration {
	var d time.Duration
	switch v := v.(type) {
	case string:
		var err error
		d, err = time.ParseDuration(v)
		if err != nil {
			p.add(field, "%s is not a duration: use a Go duration such as \"30s\", \"5m\" or \"24h\"", strconv.Quote(v))
			return nil
		}
	default:
		if n, ok := integer(v); !ok || n != 0 {
			p.add(field, "must be a duration string such as \"30s\", got %s", describe(v))
			return nil
		}
	}
	switch {
	case positive && d <= 0:
		p.add(field, "must be positive, got %s", describe(v))
		return nil
	case d < 0:
		p.add(field, "must not be negative, got %s", describe(v))
		return nil
	}
	return &d
}

// parseStrings parses a list of strings, each checked by check, with no
// duplicates (header names compare case-insensitively); the valid ones are
// returned.
func parseStrings(p *problems, field string, v any, what string, check func(p *problems, field, s string) bool) []string {
	list, ok := v.([]any)
	if !ok {
		p.add(field, "must be a list of %s, got %s", what, describe(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := e.(string)
		switch {
		case !ok:
			p.add(f, "must be one of %s, got %s", what, describe(e))
		case !check(p, f, s):
		case slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, s) }):
			p.add(f, "%s is listed twice", strconv.Quote(s))
		default:
			out = append(out, s)
		}
	}
	return out
}

// checkHeaderName checks that s is an HTTP field name (RFC 9110 token).
func checkHeaderName(p *problems, field, s string) bool {
	if s == "" {
		p.add(field, "must not be empty: use a header name such as Idempotency-Key")
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			p.add(field, "%s is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", strconv.Quote(s))
			return false
		}
	}
	return true
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
func checkPointer(p *problems, field, s string) bool {
	if !strings.HasPrefix(s, "/") {
		p.add(field, "%s is not a JSON Pointer: it must start with \"/\" (e.g. \"/idempotency_key\")", strconv.Quote(s))
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
			p.add(field, "%s is not a JSON Pointer: \"~\" must be followed by 0 or 1 (\"~0\" is \"~\", \"~1\" is \"/\")", strconv.Quote(s))
			return false
		}
	}
	return true
}

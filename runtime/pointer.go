package idem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errBadPointer is returned for a string that is not an RFC 6901 JSON Pointer.
var errBadPointer = errors.New("idem: invalid JSON pointer")

// parsePointer splits an RFC 6901 JSON Pointer into its unescaped reference
// tokens. "" (the whole document) has none.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("%w: %q does not start with /", errBadPointer, p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if !strings.Contains(t, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '~' {
				b.WriteByte(t[j])
				continue
			}
			j++
			switch {
			case j < len(t) && t[j] == '0':
				b.WriteByte('~')
			case j < len(t) && t[j] == '1':
				b.WriteByte('/')
			default:
				return nil, fmt.Errorf("%w: %q has a bad ~ escape", errBadPointer, p)
			}
		}
		toks[i] = b.String()
	}
	return toks, nil
}

// lookupPointer returns the value at toks in a document decoded into
// map[string]any / []any values.
func lookupPointer(doc any, toks []string) (any, bool) {
	for _, t := range toks {
		switch v := doc.(type) {
		case map[string]any:
			m, ok := v[t]
			if !ok {
				return nil, false
			}
			doc = m
		case []any:
			i, ok := arrayIndex(t, len(v))
			if !ok {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// arrayIndex parses an RFC 6901 array index below n: digits without a
// leading zero (so not "01", "+1" or "-0", which strconv.Atoi accepts).
func arrayIndex(t string, n int) (int, bool) {
	if t == "" || (len(t) > 1 && t[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || '9' < t[i] {
			return 0, false
		}
	}
	i, err := strconv.Atoi(t)
	if err != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

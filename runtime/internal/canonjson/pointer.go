package canonjson

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadPointer is returned for a string that is not an RFC 6901 JSON Pointer.
var ErrBadPointer = errors.New("invalid JSON pointer")

// Pointer is a parsed RFC 6901 JSON Pointer: its reference tokens in
// order. The empty pointer, which names the whole document, has none.
type Pointer []Token

// Token is one reference token, unescaped: a member name, and the
// array index it stands for (-1 if none).
type Token struct {
	Name  string
	Index int
}

// ParsePointer parses an RFC 6901 JSON Pointer.
func ParsePointer(p string) (Pointer, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("%w: %q does not start with /", ErrBadPointer, p)
	}
	toks := strings.Split(p[1:], "/")
	ptr := make(Pointer, len(toks))
	for i, t := range toks {
		if strings.Contains(t, "~") {
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
					return nil, fmt.Errorf("%w: %q has a bad ~ escape", ErrBadPointer, p)
				}
			}
			t = b.String()
		}
		ptr[i] = Token{Name: t, Index: arrayIndex(t)}
	}
	return ptr, nil
}

// arrayIndex returns the RFC 6901 array index t stands for: digits without
// a leading zero (so not "01", "+1" or "-0", which strconv.Atoi accepts).
// It returns -1 for any other token, and for an index too large for an int.
func arrayIndex(t string) int {
	if t == "" || (len(t) > 1 && t[0] == '0') {
		return -1
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || '9' < t[i] {
			return -1
		}
	}
	i, err := strconv.Atoi(t)
	if err != nil {
		return -1
	}
	return i
}

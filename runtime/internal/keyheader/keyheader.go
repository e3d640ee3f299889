// Package keyheader parses and checks idempotency keys: the value of the
// key header as draft-ietf-httpapi-idempotency-key-header defines it (an
// RFC 8941 sf-string), and a key from any source.
package keyheader

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLength is the longest idempotency key accepted, in bytes (package
// idem: MaxKeyLength).
const MaxLength = 255

// ErrInvalid is returned (wrapped) for a key that is empty, longer than
// MaxLength, not printable ASCII, or a malformed sf-string (package idem:
// ErrInvalidKey).
var ErrInvalid = errors.New("idem: invalid idempotency key")

// Parse parses the value of an idempotency key header as the IETF
// draft defines it: an RFC 8941 Item whose value is a String ("quoted", with
// \" and \\ escapes), parameters allowed and ignored. Unless strict, a bare
// token (printable ASCII without spaces, not starting with a quote) is
// accepted as the key itself. It returns the unquoted key.
func Parse(value string, strict bool) (string, error) {
	v := strings.Trim(value, " ")
	if v == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalid)
	}
	if v[0] != '"' {
		if strict {
			return "", fmt.Errorf("%w: not an sf-string", ErrInvalid)
		}
		for i := 0; i < len(v); i++ {
			if v[i] <= ' ' || v[i] > '~' {
				return "", fmt.Errorf("%w: bare key has a byte outside printable ASCII at %d", ErrInvalid, i)
			}
		}
		if err := Check(v); err != nil {
			return "", err
		}
		return v, nil
	}
	key, rest, err := parseSFString(v)
	if err != nil {
		return "", err
	}
	if err := checkParams(rest); err != nil {
		return "", err
	}
	if err := Check(key); err != nil {
		return "", err
	}
	return key, nil
}

// Check validates an unquoted key: 1..MaxLength printable ASCII bytes.
func Check(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalid)
	case len(key) > MaxLength:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < ' ' || key[i] > '~' {
			return fmt.Errorf("%w: byte outside printable ASCII at %d", ErrInvalid, i)
		}
	}
	return nil
}

// parseSFString parses an RFC 8941 sf-string at the start of s (which starts
// with '"') and returns its value and what follows the closing quote.
func parseSFString(s string) (val, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", "", fmt.Errorf("%w: bad escape in sf-string", ErrInvalid)
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), s[i+1:], nil
		case c < ' ' || c > '~':
			return "", "", fmt.Errorf("%w: byte outside printable ASCII in sf-string", ErrInvalid)
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: unterminated sf-string", ErrInvalid)
}

// checkParams validates RFC 8941 parameters (*( ";" *SP key [ "=" bare-item ] ))
// after an item; their values are ignored.
func checkParams(s string) error {
	bad := fmt.Errorf("%w: unexpected data after sf-string", ErrInvalid)
	for s != "" {
		if s[0] != ';' {
			return bad
		}
		s = strings.TrimLeft(s[1:], " ")
		// param-key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
		if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] == '*') {
			return bad
		}
		i := 1
		for i < len(s) && isParamKeyByte(s[i]) {
			i++
		}
		s = s[i:]
		if s == "" || s[0] != '=' {
			continue // boolean true
		}
		s = s[1:]
		if s != "" && s[0] == '"' {
			_, rest, err := parseSFString(s)
			if err != nil {
				return err
			}
			s = rest
			continue
		}
		// integer, decimal, token, byte sequence or boolean: a run of
		// their characters is enough to skip them.
		i = 0
		for i < len(s) && isBareItemByte(s[i]) {
			i++
		}
		if i == 0 {
			return bad
		}
		s = s[i:]
	}
	return nil
}

func isParamKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_-.*", c) >= 0
}

func isBareItemByte(c byte) bool {
	return c > ' ' && c <= '~' && strings.IndexByte(`";,()<>@[]{}\`, c) < 0
}

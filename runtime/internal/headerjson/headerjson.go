// Package headerjson encodes and decodes an http.Header as the JSON object
// encoding/json makes of it ({"Name":["value",...],...}), which is how the
// SQL stores keep a stored response's header: without reflection, since a
// replay decodes one on every request. Decode accepts what encoding/json
// and PostgreSQL's jsonb output produce (spaces after separators, escaped
// characters) and hands anything else to encoding/json.
package headerjson

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/internal/canonjson"
)

// Append appends h's JSON encoding to dst, as json.Marshal would encode it
// but for the order of the names (json.Marshal sorts them; Append keeps the
// map's order, which a JSON object does not give meaning to). A nil h is
// null.
func Append(dst []byte, h http.Header) []byte {
	if h == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	first := true
	for name, values := range h {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = canonjson.AppendString(dst, []byte(name))
		dst = append(dst, ':')
		if values == nil {
			dst = append(dst, "null"...)
			continue
		}
		dst = append(dst, '[')
		for i, v := range values {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = canonjson.AppendString(dst, []byte(v))
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// Encode is h's encoding as a stored record's header: Append's, but an
// empty object for a nil h, which a store's column holds as {}.
func Encode(h http.Header) []byte {
	if h == nil {
		return []byte("{}")
	}
	return Append(nil, h)
}

// Decode decodes data, an encoding of an http.Header: an object of arrays
// of strings (or null). null, or no data, is a nil header.
func Decode(data []byte) (http.Header, error) {
	if h, ok := decodeFast(data); ok {
		return h, nil
	}
	var h http.Header
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, err
	}
	return h, nil
}

// decodeFast decodes data when every string in it is free of escapes and
// it is well formed; ok is false otherwise (Decode asks encoding/json).
func decodeFast(data []byte) (h http.Header, ok bool) {
	p := parser{data: data}
	p.space()
	if p.literal("null") {
		p.space()
		return nil, p.i == len(p.data)
	}
	if len(data) == 0 {
		return nil, true
	}
	if !p.byte('{') {
		return nil, false
	}
	h = http.Header{}
	p.space()
	if p.byte('}') {
		p.space()
		return h, p.i == len(p.data)
	}
	for {
		name, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if !p.byte(':') {
			return nil, false
		}
		p.space()
		var values []string
		switch {
		case p.literal("null"):
		case p.byte('['):
			values = []string{}
			p.space()
			if !p.byte(']') {
				for {
					v, ok := p.str()
					if !ok {
						return nil, false
					}
					values = append(values, v)
					p.space()
					if p.byte(']') {
						break
					}
					if !p.byte(',') {
						return nil, false
					}
					p.space()
				}
			}
		default:
			return nil, false
		}
		h[name] = values
		p.space()
		if p.byte('}') {
			p.space()
			return h, p.i == len(p.data)
		}
		if !p.byte(',') {
			return nil, false
		}
		p.space()
	}
}

type parser struct {
	data []byte
	i    int
}

func (p *parser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) byte(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) literal(s string) bool {
	if len(p.data)-p.i >= len(s) && string(p.data[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// str reads a string without escapes, of valid UTF-8 and no control
// characters; ok is false for anything else.
func (p *parser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '"':
			s := p.data[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

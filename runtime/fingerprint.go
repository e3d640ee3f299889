package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/internal/canonjson"
)

// payload is a request body as the fingerprint sees it.
type payload struct {
	raw    []byte // the bytes as sent
	isJSON bool   // raw is exactly one JSON value
	canon  []byte // when isJSON: its canonical form, without ignored members and body key
	key    []byte // when isJSON and the operation has a body key: the JSON value at its pointer, nil if none

	buf *[]byte // canon's buffer, from canonBufs
}

// canonBufs holds the buffers of canonical forms between requests: one
// lives from jsonPayload to the fingerprint (payload.free).
var canonBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxCanonBuf is the largest buffer canonBufs keeps.
const maxCanonBuf = 64 << 10

// jsonPayload canonicalises raw for op (see canonjson.AppendCanonical); if raw is
// not exactly one JSON value the payload is kept raw. For an operation
// whose key is in the body, the same pass locates the key's value.
func jsonPayload(op *idemop.Operation, raw []byte) payload {
	drop, key := opDropPointers(op)
	buf := canonBufs.Get().(*[]byte)
	if cap(*buf) < len(raw) {
		*buf = make([]byte, 0, len(raw)) // the canonical form is about as long as raw
	}
	canon, at, ok := canonjson.Walk((*buf)[:0], raw, drop, key)
	if !ok {
		putCanonBuf(buf)
		return payload{raw: raw}
	}
	*buf = canon
	return payload{raw: raw, isJSON: true, canon: canon, key: at.Value.In(raw), buf: buf}
}

// free gives the canonical form's buffer back for another request's, once
// p's fingerprint is computed: p.canon is not used afterwards. A payload
// that is not freed leaves its buffer to the garbage collector.
func (p *payload) free() {
	if p.buf != nil {
		putCanonBuf(p.buf)
	}
	p.buf, p.canon = nil, nil
}

// putCanonBuf puts buf back in canonBufs, unless it grew past maxCanonBuf.
func putCanonBuf(buf *[]byte) {
	if cap(*buf) <= maxCanonBuf {
		canonBufs.Put(buf)
	}
}

// opDropPointers returns the parsed pointers left out of the body
// fingerprint: the ignore pointers and, for a body key, the key's member,
// whose index it returns as key (-1 for none). Pointers that do not parse
// are skipped (the generator validates them; a bad one removes nothing).
func opDropPointers(op *idemop.Operation) (ptrs []canonjson.Pointer, key int) {
	n := len(op.FingerprintIgnore)
	bodyKey := opKeyHeader(op) == "" && op.KeyPointer != "" // a composite key's members stay in
	if bodyKey {
		n++
	}
	if n == 0 {
		return nil, -1
	}
	ptrs = make([]canonjson.Pointer, 0, n)
	add := func(s string) bool {
		p, err := canonjson.ParsePointer(s)
		if err == nil {
			ptrs = append(ptrs, p)
		}
		return err == nil
	}
	for _, s := range op.FingerprintIgnore {
		add(s)
	}
	if bodyKey && add(op.KeyPointer) {
		return ptrs, len(ptrs) - 1
	}
	return ptrs, -1
}

// isJSONContentType reports whether a Content-Type is application/json or
// a +json type.
func isJSONContentType(ct string) bool {
	switch ct {
	case "":
		return false
	case "application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8":
		return true // the common cases, without parsing
	}
	if !containsJSONFold(ct) {
		return false // the media type of neither names JSON: no need to parse (which allocates)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// containsJSONFold reports whether s contains "json" in any case.
func containsJSONFold(s string) bool {
	for i := 0; i+4 <= len(s); i++ {
		if s[i]|0x20 == 'j' && s[i+1]|0x20 == 's' && s[i+2]|0x20 == 'o' && s[i+3]|0x20 == 'n' {
			return true
		}
	}
	return false
}

// fingerprint hashes what identifies a request: the operation, the method
// and escaped path (which carries the path parameters), the query with its
// keys sorted, the listed headers in order, and the body. A JSON body is
// hashed in its canonical form (see jsonPayload); any other body is hashed
// as is. r may be nil (for [Do]). The engine compares [apiFingerprint] of
// it, which adds the API identity.
func fingerprint(op *idemop.Operation, r *http.Request, body payload) [sha256.Size]byte {
	if r == nil {
		return fingerprintOf(op, nil, body)
	}
	return fingerprintOf(op, &requestLine{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, header: r.Header}, body)
}

// requestLine is what fingerprint hashes of a request besides its body,
// from net/http or from a framework's own request ([Request]).
type requestLine struct {
	method, path, query string
	header              headerValues
}

// fingerprintOf is fingerprint of a request's line (nil for [Do]) and body.
func fingerprintOf(op *idemop.Operation, rl *requestLine, body payload) [sha256.Size]byte {
	var buf [512]byte
	b := buf[:0]
	b = field(b, "op", op.ID)
	if rl != nil {
		b = field(b, "method", rl.method)
		b = field(b, "path", rl.path)
		b = field(b, "query", canonicalQuery(rl.query))
		for _, name := range op.FingerprintHeaders {
			name = http.CanonicalHeaderKey(name)
			vals := rl.header.Values(name)
			b = field(b, "header", name)
			b = field(b, "count", strconv.Itoa(len(vals)))
			for _, v := range vals {
				b = field(b, "value", v)
			}
		}
	}
	if body.isJSON {
		b = field(b, "json", body.canon)
	} else {
		b = field(b, "raw", body.raw)
	}
	return sha256.Sum256(b)
}

// apiFingerprint is the fingerprint the engine gives the store, in hex
// ([idemstore.AcquireRequest.Fingerprint]): the SHA-256 of the API
// identity, the operation's name in record keys (its ID, and its provider
// for an event) and sum, a request's [fingerprint]. With the API identity
// and the operation in what is compared, two operations whose record keys
// collide ([idemstore.OperationToken] is 48 bits) refuse each other's keys
// (422) instead of replaying each other's answers. sum in hex is the
// fingerprint before it had them ([idemstore.Origin]'s Request).
func apiFingerprint(api, name string, sum [sha256.Size]byte) [sha256.Size]byte {
	var buf [192]byte
	b := field(buf[:0], "fingerprint", "2")
	b = field(b, "api", api)
	b = field(b, "operation", name)
	b = field(b, "request", sum[:])
	return sha256.Sum256(b)
}

// field appends a tagged, length-prefixed field, so that no two different
// sequences of fields hash the same bytes.
func field[V string | []byte](b []byte, tag string, val V) []byte {
	b = append(b, tag...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(val)))
	return append(b, val...)
}

// canonicalQuery renders the query with sorted keys (values keep their
// order); an unparsable query is used as sent.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return raw
	}
	return vals.Encode()
}

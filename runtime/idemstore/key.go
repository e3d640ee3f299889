package idemstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// RecordKey is the key under which a store keeps the record of a client's
// key, in scope, for operation (the operation ID): the engine's key, which a
// store receives as AcquireRequest.Key and prefixes with its own prefix
// (redisstore keeps the record at prefix + ":" + RecordKey(...)). scope is
// "" for a shared key space, else the hashed form of the request's scope
// ([ScopeKey]). The inspect tool (cmd/idemctl) and custom stores compose
// keys with it; it is the only place that does.
func RecordKey(op, scope, key string) string { return RecordKeyIn("", op, scope, key) }

// RecordKeyIn is [RecordKey] in the key space of api (package idem: Operation.API):
// [OperationToken](api, op) + ":" + scope + ":" + key, with '\' and ':'
// escaped in scope and key, so parts joined by ':' can never collide. The
// API and the operation take nine bytes of every key whatever their names'
// length: Redis keeps a key of up to 60 bytes in its 64-byte size class,
// and a 36-byte client key with the default prefix fits. The names behind
// a token are kept by the store where it can ([OperationNamer]). The engine
// keys every record with it; idemctl's -api and -op name api and op.
func RecordKeyIn(api, op, scope, key string) string {
	return TokenRecordKey(OperationToken(api, op), scope, key)
}

// TokenRecordKey is [RecordKeyIn] of the operation whose [OperationToken] is
// token: the engine computes each operation's token once, and a tool that
// lists records has the token of each ([SplitRecordKey]).
func TokenRecordKey(token, scope, key string) string {
	var b strings.Builder
	b.Grow(len(token) + len(scope) + len(key) + 4)
	b.WriteString(token)
	b.WriteByte(':')
	writeEscaped(&b, scope)
	b.WriteByte(':')
	writeEscaped(&b, key)
	return b.String()
}

// tokenLen is the length of an [OperationToken]: its mark and 8 characters.
const tokenLen = 1 + 8

// OperationToken is the short, stable name of operation op of API api in
// record keys: "~" and the first 8 characters of the base64url form of the
// SHA-256 of len(api) as a uvarint, api and op (48 bits). Two operations
// sharing a Redis share a token by accident with odds of about n²/2^49 for n operations
// (one in 5.6 million for 10,000), or on purpose in under a minute of
// search, and even then a client key sent to both is answered 422 rather
// than replayed, since the engine's fingerprint covers the API identity
// and the operation. The "~" tells a key of this layout from the previous one
// (previouslayout.PreviousRecordKey), whose names never start with it as
// generated.
func OperationToken(api, op string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(n[:0], uint64(len(api))))
	h.Write([]byte(api))
	h.Write([]byte(op))
	var sum [sha256.Size]byte
	var b [tokenLen]byte
	b[0] = tokenMark
	base64.RawURLEncoding.Encode(b[1:], h.Sum(sum[:0])[:6])
	return string(b[:])
}

// tokenMark starts every [OperationToken].
const tokenMark = '~'

// SplitRecordKey is the inverse of [RecordKeyIn], for tools that list the
// records of a store: the operation token and the scope and key,
// unescaped. ok is false for a key of another shape (the previous
// layout's keys are previouslayout's).
func SplitRecordKey(k string) (token, scope, key string, ok bool) {
	if len(k) < tokenLen+2 || k[0] != tokenMark || k[tokenLen] != ':' {
		return "", "", "", false
	}
	parts, n := splitEscaped(k[tokenLen+1:])
	if n != 2 {
		return "", "", "", false
	}
	return k[:tokenLen], parts[0], parts[1], true
}

// splitEscaped splits k at its unescaped ':' into at most two parts,
// unescaped, and returns how many there are (0 for more than two).
func splitEscaped(k string) (parts [2]string, n int) {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '\\' && i+1 < len(k):
			i++
			b.WriteByte(k[i])
		case c == ':':
			if n == len(parts)-1 {
				return parts, 0
			}
			parts[n] = b.String()
			n++
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	parts[n] = b.String()
	return parts, n + 1
}

// writeEscaped writes s to b with each '\' and ':' preceded by a '\', in
// the runs between them (a key usually has none: one write).
func writeEscaped(b *strings.Builder, s string) {
	run := 0 // the start of the run not written yet
	for i := 0; i < len(s); i++ {
		if s[i] == ':' || s[i] == '\\' {
			b.WriteString(s[run:i])
			b.WriteByte('\\')
			run = i // s[i] begins the next run
		}
	}
	b.WriteString(s[run:])
}

package previouslayout

import (
	"strings"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// PreviousRecordKey is the key a record had in the previous layout of
// keys, the names in full: api + ":" + op + ":" + scope + ":" + key, each
// part escaped as the current layout escapes its parts, or op + ":" +
// scope + ":" + key for api "". The store that New returns looks there
// during the upgrade, from the request's idemstore.AcquireRequest.Origin,
// so that a retry across the upgrade is still answered from the record
// written before it; idemctl lists records of either layout.
func PreviousRecordKey(api, op, scope, key string) string {
	names := escaped(op)
	if api != "" {
		names = escaped(api) + ":" + names
	}
	return idemstore.TokenRecordKey(names, scope, key)
}

// escaped is s escaped as a part of a record key: each '\' and ':'
// preceded by a '\'. It is idemstore's escaping, which composes a key's
// scope and key the same way in both layouts.
func escaped(s string) string {
	k := idemstore.TokenRecordKey("", s, "") // ":" + escaped(s) + ":"
	return k[1 : len(k)-1]
}

// SplitPreviousRecordKey is the inverse of [PreviousRecordKey]: the parts of
// k, unescaped, with api "" for a key without one. ok is false for a key of
// another shape (fewer than three parts, or more than four, or a key of the
// current layout).
func SplitPreviousRecordKey(k string) (api, op, scope, key string, ok bool) {
	if _, _, _, cur := idemstore.SplitRecordKey(k); cur {
		return "", "", "", "", false
	}
	// The parts, split at each ':' that no '\' escapes: the loop of
	// idemstore's SplitRecordKey, for this layout's three or four parts,
	// kept here so that retiring the layout deletes it with the folder.
	var parts []string
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '\\' && i+1 < len(k):
			i++
			b.WriteByte(k[i])
		case c == ':':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	switch parts = append(parts, b.String()); len(parts) {
	case 3:
		return "", parts[0], parts[1], parts[2], true
	case 4:
		return parts[0], parts[1], parts[2], parts[3], true
	}
	return "", "", "", "", false
}

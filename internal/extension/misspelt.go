package extension

import (
	"fmt"
	"strings"
)

// Misspelt reports whether key, an extension's name in a spec, is a
// misspelling of Name: not Name itself, but a key that, in lower case and
// with underscores read as hyphens, starts with "x" and either is at most
// two edits away from Name, an edit being a letter inserted, deleted,
// replaced, or swapped with its neighbour (x-idempotnet, x-idempotency,
// x-idempotence, X-Idempotent, x_idempotent, xidempotent), or starts with Name's stem
// "x-idempoten" (x-idempotency-key, x-idempotent-key). An operation carrying
// one would run unprotected, silently; extensions of other tools (x-go-name,
// x-oapi-codegen-extra-tags, x-amazon-apigateway-integration,
// x-fern-idempotency-headers) are never that close.
func Misspelt(key string) bool {
	if key == Name {
		return false
	}
	norm := strings.ReplaceAll(strings.ToLower(key), "_", "-")
	if !strings.HasPrefix(norm, "x") {
		return false
	}
	return strings.HasPrefix(norm, stem) || editDistance(norm, Name, 2) <= 2
}

// stem is the part of Name that its misspellings keep: x-idempotency-key,
// x-idempotent-key and x-idempotence all start with it.
const stem = "x-idempoten"

// MisspeltError is the problem of a Misspelt extension. Where says what it
// is on: "operation", "document" or "path item"; beside, that the same
// object carries Name too, whose fields are where settings go.
func MisspeltError(key, where string, beside bool) error {
	consequence := "so the operation would run without idempotency protection"
	switch {
	case where == "path item":
		consequence = "and " + Name + " belongs on the path's operations, not on the path item"
	case beside:
		consequence = "and settings go in the fields of the " + Name + " beside it (docs/extension.md)"
	case where == "document":
		consequence = "so its defaults would apply to no operation"
	}
	return fmt.Errorf("%s: unknown extension, did you mean %s? idemgen ignores it as written, %s", key, Name, consequence)
}

// editDistance is the optimal-string-alignment distance between a and b
// (insertions, deletions, substitutions and transpositions of adjacent
// bytes), or max+1 once it is certain to exceed max.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d > max || -d > max {
		return max + 1
	}
	// prev2, prev and cur are rows i-2, i-1 and i of the distance matrix.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			rowMin = min(rowMin, d)
		}
		if rowMin > max {
			return max + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

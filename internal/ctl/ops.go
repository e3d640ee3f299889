package ctl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

// The records are stored under the Go name of their operation
// (oapi-codegen's name for the operationId: createPet is CreatePet), while
// an operator reads the operationId in the spec. -op takes either: a name
// without a record is tried as its Go name, then, if that has none either,
// matched against the operations that have records under the prefix.

// goName is oapi-codegen's default name for an operationId (its
// ToCamelCase): the first letter and every letter after a separator upper
// case, the separators dropped.
func goName(op string) string {
	var b strings.Builder
	capNext := true
	for _, r := range strings.TrimSpace(op) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if capNext {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			capNext = false
		default:
			capNext = true
		}
	}
	return b.String()
}

// fold is the form in which an operationId and its Go name under any name
// normalizer compare equal: letters and digits, lower case.
func fold(op string) string {
	var b strings.Builder
	for _, r := range op {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// maxScan bounds the keys a diagnosis reads, so that it stays an
// operator's quick look on a large store.
const maxScan = 200_000

// stored is what a scan of the prefix found.
type stored struct {
	ops      map[string]int // records per operation
	withKey  map[string]int // records with the wanted client key, per operation (any scope)
	apis     map[string]int // records under another API identity than -api, per identity
	scanned  int            // keys read
	complete bool           // the whole prefix was read
}

// scanStored reads the record keys under prefix (at most maxScan) and
// counts those of API identity api by operation, those with the client key
// key, and the others by their API identity. A key of the current layout
// names its operation by a token, which the names the engines kept
// (redisstore.OperationNames) turn back into the API and operation; a
// token without a name is named after op (or its Go name) of api if it is
// theirs, and counts under the API identity "?" + token otherwise.
func scanStored(ctx context.Context, rdb *redis.Client, prefix, api, op, key string) (stored, error) {
	s := stored{ops: map[string]int{}, withKey: map[string]int{}, apis: map[string]int{}}
	names, err := redisstore.OperationNames(ctx, rdb, prefix)
	if err != nil {
		return s, err
	}
	for _, name := range []string{op, goName(op)} {
		if t := idemstore.OperationToken(api, name); names[t] == [2]string{} {
			names[t] = [2]string{api, name}
		}
	}
	s.scanned, s.complete, err = scanPrefix(ctx, rdb, prefix, func(k string) {
		got, op, k, ok := splitKey(k, names)
		switch {
		case !ok:
			return // not a record of the store
		case got != api:
			s.apis[got]++
			return
		}
		s.ops[op]++
		if k == key {
			s.withKey[op]++
		}
	})
	return s, err
}

// scanPrefix calls fn with every key under prefix, the prefix cut off,
// reading at most about maxScan keys, and returns how many it read and
// whether that was all of them.
func scanPrefix(ctx context.Context, rdb *redis.Client, prefix string, fn func(k string)) (scanned int, complete bool, err error) {
	match := "*"
	if prefix != "" {
		match = globEscape(prefix) + ":*"
	}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return scanned, false, err
		}
		for _, k := range keys {
			if prefix != "" {
				k = strings.TrimPrefix(k, prefix+":")
			}
			fn(k)
		}
		scanned += len(keys)
		if cursor = next; cursor == 0 {
			return scanned, true, nil
		}
		if scanned >= maxScan {
			return scanned, false, nil
		}
	}
}

// splitKey returns the API identity, operation and client key of record
// key k of either layout, naming a token by names.
func splitKey(k string, names map[string][2]string) (api, op, key string, ok bool) {
	if token, _, key, ok := idemstore.SplitRecordKey(k); ok {
		if n, named := names[token]; named {
			return n[0], n[1], key, true
		}
		return "?" + token, token, key, true
	}
	api, op, _, key, ok = previouslayout.SplitPreviousRecordKey(k)
	return api, op, key, ok
}

// matching returns the stored operation that op names under another
// spelling (an operationId for its Go name), or "".
func (s stored) matching(op string) string {
	var found []string
	for name := range s.ops {
		if name != op && fold(name) == fold(op) {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		return "" // none, or ambiguous: the listing says what is there
	}
	return found[0]
}

// explain writes what the prefix holds, after a lookup of o found nothing.
func (s stored) explain(w io.Writer, o options, secretSet bool) {
	fmt.Fprintf(w, "idemctl: no record for operation %s, scope %q, key %q (API %q, under prefix %q)\n", o.op, o.scope, o.key, o.api, o.prefix)
	what := "the prefix"
	if !s.complete {
		what = fmt.Sprintf("the first %d keys under the prefix", s.scanned)
	}
	if len(s.apis) > 0 {
		apis := make([]string, 0, len(s.apis))
		for a := range s.apis {
			apis = append(apis, a)
		}
		sort.Strings(apis)
		fmt.Fprintf(w, "  records under other API identities in %s (pass -api with one: a server generated with an API identity keeps its records under the API field of its idemop.Operation values):\n", what)
		for _, a := range apis {
			fmt.Fprintf(w, "    -api %q (%d records)\n", a, s.apis[a])
		}
	}
	if len(s.ops) == 0 && len(s.apis) == 0 {
		fmt.Fprintf(w, "  %s hold no records at all: check -redis (and its database number) and -prefix\n", what)
	} else if len(s.ops) > 0 {
		names := make([]string, 0, len(s.ops))
		for name := range s.ops {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "  operations with records in %s (-op takes these names or their operationIds):\n", what)
		for _, name := range names {
			extra := ""
			if n := s.withKey[name]; n > 0 {
				extra = fmt.Sprintf(", %d with key %q under another scope", n, o.key)
			}
			fmt.Fprintf(w, "    %s (%d records%s)\n", name, s.ops[name], extra)
		}
	}
	switch {
	case o.scoped && !secretSet:
		fmt.Fprintf(w, "  -scope was given without a scope secret ($%s is unset or empty): a server with idem.WithScopeSecret stores the scope hashed with it; export the server's secret in $%s\n", o.scopeSecretEnv, o.scopeSecretEnv)
	case !o.scoped && s.withKey[o.op] > 0:
		fmt.Fprintf(w, "  records of %s with this key are scoped: give the tenant, principal or API key with -scope\n", o.op)
	}
}

// globEscape escapes the glob characters of Redis's MATCH in s.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\^-`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

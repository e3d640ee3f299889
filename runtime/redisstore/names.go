package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// operationNames is the hash, under the prefix, from operation token to
// the API identity and operation ID behind it ("api\nop"), which idemctl
// reads to name the records it lists.
const operationNames = "operations"

// NameOperation implements [idemstore.OperationNamer]: HSET of the token in the
// prefix's operations hash.
func (s *Store) NameOperation(ctx context.Context, token, api, op string) error {
	c, ok := s.rdb.(redis.Cmdable)
	if !ok {
		return nil // a client that only runs scripts keeps no names
	}
	if err := c.HSet(ctx, s.storageKey(operationNames), token, api+"\n"+op).Err(); err != nil {
		return &idemstore.StoreError{Op: "name operation", Err: err}
	}
	return nil
}

// OperationNames returns the names behind the operation tokens of the
// store's keys, token to API identity and operation ID, as the engines
// that wrote them named them ([Store.NameOperation]).
func OperationNames(ctx context.Context, rdb redis.Cmdable, prefix string) (map[string][2]string, error) {
	key := operationNames
	if prefix != "" {
		key = prefix + ":" + key
	}
	m, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string][2]string, len(m))
	for token, v := range m {
		if api, op, ok := strings.Cut(v, "\n"); ok {
			out[token] = [2]string{api, op}
		}
	}
	return out, nil
}

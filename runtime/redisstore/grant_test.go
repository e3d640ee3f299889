package redisstore

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// TestGrantIsEnough: a Redis user given exactly the rights that the
// store's misconfiguration message tells an operator to grant (and the
// docs repeat) can do everything the store does: Check passes, and the
// conformance suite passes, steps included.
func TestGrantIsEnough(t *testing.T) {
	admin, prefix := redistest.Keyspace(t)
	ctx := context.Background()
	rules := regexp.MustCompile(`ACL SETUSER <user> ([^)]*)\)`).FindStringSubmatch(grantScripts)
	if rules == nil {
		t.Fatalf("no ACL SETUSER in the message %q", grantScripts)
	}
	user := "grant-" + strings.ReplaceAll(prefix, ":", "-")
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">secret", "resetchannels"}
	for _, r := range strings.Fields(strings.ReplaceAll(rules[1], "<prefix>", prefix)) {
		args = append(args, r)
	}
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	opts := *admin.Options()
	opts.Username, opts.Password = user, "secret"
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })

	store := New(rdb, WithPrefix(prefix))
	if err := store.Check(ctx); err != nil {
		t.Fatalf("Check as a user with the grant %q: %v", rules[1], err)
	}
	idemstoretest.Run(t, idemstoretest.Harness{New: func() (idemstore.Store, error) { return store, nil }})
}

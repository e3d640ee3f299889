package embedredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/embedredis"
)

// TestKeysExpireWithTheWallClock: a key set with a TTL is gone once the TTL
// has passed, without anyone calling FastForward.
func TestKeysExpireWithTheWallClock(t *testing.T) {
	s, err := embedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "short", "v", 20*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "long", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	for rdb.Exists(ctx, "short").Val() == 1 {
		if time.Since(set) > 10*time.Second {
			t.Fatal("a 20ms key still exists after 10s")
		}
	}
	if waited := time.Since(set); waited < 20*time.Millisecond {
		t.Errorf("a 20ms key expired after %v", waited)
	}
	if ttl := rdb.PTTL(ctx, "long").Val(); ttl <= 59*time.Minute || ttl >= time.Hour {
		t.Errorf("a 1h key has a TTL of %v, want a little under 1h", ttl)
	}
	s.Stop()
	s.Stop() // idempotent
}

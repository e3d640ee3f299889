package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// info returns the fields of INFO section as a map.
func info(ctx context.Context, rdb *redis.Client, section string) (map[string]string, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("loadtest: INFO %s: %w", section, err)
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields, sc.Err()
}

// roundTrips counts the commands and pipelines a go-redis client sends, on
// the client side: Redis's own commandstats also count the commands a
// script calls, which are not round trips.
type roundTrips struct{ n atomic.Int64 }

// count makes c count the round trips of rdb.
func (c *roundTrips) count(rdb *redis.Client) { rdb.AddHook(c) }

func (c *roundTrips) load() int64 { return c.n.Load() }

// DialHook implements redis.Hook.
func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// intField parses an integer INFO field.
func intField(fields map[string]string, name string) (int64, error) {
	n, err := strconv.ParseInt(fields[name], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("loadtest: INFO field %s: %w", name, err)
	}
	return n, nil
}

// cpuSeconds is the Redis server's user+system CPU time so far.
func cpuSeconds(ctx context.Context, rdb *redis.Client) (float64, error) {
	fields, err := info(ctx, rdb, "cpu")
	if err != nil {
		return 0, err
	}
	var total float64
	for _, name := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(fields[name], 64)
		if err != nil {
			return 0, fmt.Errorf("loadtest: INFO field %s: %w", name, err)
		}
		total += v
	}
	return total, nil
}

// serverVersion returns redis_version.
func serverVersion(ctx context.Context, rdb *redis.Client) string {
	fields, err := info(ctx, rdb, "server")
	if err != nil {
		return "unknown"
	}
	return fields["redis_version"]
}

// deletePrefix deletes every key under prefix (SCAN, then UNLINK in
// batches), so a run on a shared server leaves nothing behind.
func deletePrefix(ctx context.Context, rdb *redis.Client, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	batch := make([]string, 0, 1000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := rdb.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return fmt.Errorf("loadtest: delete %s*: %w", prefix, err)
			}
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("loadtest: scan %s*: %w", prefix, err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("loadtest: delete %s*: %w", prefix, err)
	}
	return nil
}

package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

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

// dataCommands counts the calls of the commands the variants send (GET,
// SET, EVALSHA, EVAL), server-wide, from INFO commandstats.
func dataCommands(ctx context.Context, rdb *redis.Client) (int64, error) {
	fields, err := info(ctx, rdb, "commandstats")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, name := range []string{"get", "set", "evalsha", "eval"} {
		stats, ok := fields["cmdstat_"+name]
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("loadtest: commandstats %s: %w", name, err)
				}
				total += n
			}
		}
	}
	return total, nil
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

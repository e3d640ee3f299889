package loadtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// memResult is the Redis memory one completed record takes.
type memResult struct {
	bodySize      int
	compressed    bool
	location      bool // the response has a Location header besides its Content-Type
	records       int
	keyLen        int     // bytes of one Redis key
	storedRecord  float64 // average STRLEN of a record: status, headers, body
	memoryUsage   float64 // average MEMORY USAGE key SAMPLES 0
	usedPerRecord float64 // growth of used_memory per record
	encoding      string  // OBJECT ENCODING of a record
}

// memory stores cfg.MemoryRecords completed records per body size, without
// and with compression, and measures them.
func memory(ctx context.Context, cfg Config, rdb *redis.Client, child bool, stdout, stderr io.Writer) ([]memResult, error) {
	if child {
		// A server of its own: what other modes left behind (a keyspace
		// still rehashing, keys expiring) moves used_memory by megabytes,
		// as much as thousands of records.
		srv, err := redisproc.Start(ctx, redisproc.Options{Path: cfg.RedisServer, CPUs: cfg.RedisCPUs})
		if err != nil {
			return nil, fmt.Errorf("start redis-server for the memory measurement: %w", err)
		}
		defer srv.Stop()
		rdb = redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		defer rdb.Close()
	}
	// The records go under a prefix as long as the default "idem", so the
	// keys are as long as production keys; it is checked to be unused.
	prefix, err := unusedPrefix(ctx, rdb)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := deletePrefix(context.WithoutCancel(ctx), rdb, prefix+":"); err != nil {
			fmt.Fprintf(stderr, "idemload: cleanup: %v\n", err)
		}
	}()
	// A warm-up row, not reported, so that connection buffers, the script
	// cache and allocator arenas are in place before the first measurement.
	warm := cfg
	warm.MemoryRecords = min(cfg.MemoryRecords, 1000)
	if _, err := measureMemory(ctx, warm, rdb, prefix, slices.Max(cfg.MemorySizes), true, true); err != nil {
		return nil, err
	}
	if err := deletePrefix(ctx, rdb, prefix+":"); err != nil {
		return nil, err
	}
	var out []memResult
	for _, size := range cfg.MemorySizes {
		for _, compress := range []bool{false, true} {
			for _, location := range []bool{false, true} {
				fmt.Fprintf(stderr, "idemload: memory: %d records of %d bytes, compression %v, Location %v\n", cfg.MemoryRecords, size, compress, location)
				res, err := measureMemory(ctx, cfg, rdb, prefix, size, compress, location)
				if err != nil {
					return nil, err
				}
				if err := deletePrefix(ctx, rdb, prefix+":"); err != nil {
					return nil, err
				}
				out = append(out, res)
			}
		}
	}
	writeMemory(stdout, cfg, out, child)
	return out, nil
}

// unusedPrefix returns a four-character key prefix ("m" and three random
// characters) under which the server holds no key.
func unusedPrefix(ctx context.Context, rdb *redis.Client) (string, error) {
	for range 20 {
		p := "m" + strings.ToLower(rand.Text()[:3])
		keys, _, err := rdb.Scan(ctx, 0, p+":*", 1000).Result()
		if err != nil {
			return "", fmt.Errorf("loadtest: scan: %w", err)
		}
		if len(keys) == 0 {
			return p, nil
		}
	}
	return "", errors.New("loadtest: no unused four-character key prefix found")
}

// recordKey returns the client key of record i: 36 bytes, like a UUID.
func recordKey(i int) string { return fmt.Sprintf("0199c6d2-7b1e-7cc4-9a43-%012d", i) }

func measureMemory(ctx context.Context, cfg Config, rdb *redis.Client, prefix string, size int, compress, location bool) (memResult, error) {
	opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithCompression(0)}
	if compress {
		opts[1] = redisstore.WithCompression(cfg.CompressOver)
	}
	store := redisstore.New(rdb, opts...)
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return memResult{}, err
	}
	// Distinct bodies per record (seeded by i), so compression sees one
	// body at a time, as it would in production.
	err = forEach(ctx, cfg.MemoryRecords, 16, func(i int) error {
		return storeRecord(ctx, store, idemstore.RecordKeyIn(cfg.MemoryAPI, "CreateOrder", "", recordKey(i)), jsonBody(size, uint64(i)), location, 24*time.Hour)
	})
	if err != nil {
		return memResult{}, err
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return memResult{}, err
	}
	res := memResult{
		bodySize:      size,
		compressed:    compress,
		location:      location,
		records:       cfg.MemoryRecords,
		usedPerRecord: float64(after-before) / float64(cfg.MemoryRecords),
	}
	sample := min(cfg.MemoryRecords, 500)
	var usage, stored int64
	for i := range sample {
		key := prefix + ":" + idemstore.RecordKeyIn(cfg.MemoryAPI, "CreateOrder", "", recordKey(i*cfg.MemoryRecords/sample))
		res.keyLen = len(key)
		n, err := rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			return memResult{}, fmt.Errorf("loadtest: MEMORY USAGE: %w", err)
		}
		usage += n
		b, err := rdb.StrLen(ctx, key).Result()
		if err != nil {
			return memResult{}, fmt.Errorf("loadtest: STRLEN: %w", err)
		}
		stored += b
		if res.encoding == "" {
			if res.encoding, err = rdb.ObjectEncoding(ctx, key).Result(); err != nil {
				return memResult{}, fmt.Errorf("loadtest: OBJECT ENCODING: %w", err)
			}
		}
	}
	res.memoryUsage = float64(usage) / float64(sample)
	res.storedRecord = float64(stored) / float64(sample)
	return res, nil
}

// storeRecord acquires key and completes it with a 201 JSON response, with
// a Location header if location is set.
func storeRecord(ctx context.Context, store idemstore.Store, key string, body []byte, location bool, retention time.Duration) error {
	fp := sha256.Sum256([]byte(key))
	token := rand.Text()
	acq, err := store.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: hex.EncodeToString(fp[:]), Lease: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("loadtest: acquire: %w", err)
	}
	if acq.Outcome != idemstore.OutcomeFirstRun {
		return fmt.Errorf("loadtest: acquire %s: outcome %d, want proceed", key, acq.Outcome)
	}
	rec := &idemstore.Record{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
	if location {
		rec.Header.Set("Location", "/orders/ord_"+hex.EncodeToString(fp[:8]))
	}
	if err := store.Complete(ctx, key, token, rec, retention); err != nil {
		return fmt.Errorf("loadtest: complete: %w", err)
	}
	return nil
}

// forEach calls fn(0..n-1) from workers goroutines and returns the first
// error.
func forEach(ctx context.Context, n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// usedMemory is INFO memory used_memory.
func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	fields, err := info(ctx, rdb, "memory")
	if err != nil {
		return 0, err
	}
	return intField(fields, "used_memory")
}

func writeMemory(w io.Writer, cfg Config, rs []memResult, child bool) {
	fmt.Fprintf(w, "## Redis memory per completed record\n\n")
	fmt.Fprintf(w, "%d records per row, each a 201 response with a distinct JSON body and the header Content-Type: application/json, and in the rows that say so a Location header (28 bytes of value), stored through redisstore.Store (acquire, then complete with 24h retention). Compression is redisstore.WithCompression(%d). Keys are %d bytes. MEMORY USAGE is the average over up to 500 records (SAMPLES 0); used_memory/record is the growth of INFO used_memory over all records, which includes the keyspace and expires dictionaries.",
		cfg.MemoryRecords, cfg.CompressOver, rs[0].keyLen)
	if !child {
		fmt.Fprintf(w, " The Redis server was shared (-redis), so used_memory may include other clients' keys.")
	}
	fmt.Fprintf(w, "\n\n| body | compression | headers | stored record (avg bytes) | MEMORY USAGE (bytes) | used_memory / record (bytes) | encoding |\n|--:|---|---|--:|--:|--:|---|\n")
	for _, r := range rs {
		c := "off"
		if r.compressed {
			c = "gzip"
		}
		h := "Content-Type"
		if r.location {
			h += ", Location"
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %.0f | %.0f | %s |\n", r.bodySize, c, h, r.storedRecord, r.memoryUsage, r.usedPerRecord, r.encoding)
	}
	fmt.Fprintln(w)
}

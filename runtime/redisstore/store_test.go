package redisstore

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// redisBackend is one Redis the store table runs against: the real server
// of REDIS_URL, or miniredis with a clock the test moves.
type redisBackend struct {
	rdb    *redis.Client
	mini   *miniredis.Miniredis // nil for real Redis
	now    time.Time            // miniredis clock
	prefix string

	scriptOnly  bool // stores run acquire.lua alone, without SET NX GET first
	twoCommands bool // stores send SET NX and GET, as to a server before Redis 7.0
}

// eachRedisBackend runs fn against real Redis (skipped without REDIS_URL,
// unless CI=true) and against miniredis, in parallel.
func eachRedisBackend(t *testing.T, fn func(t *testing.T, b *redisBackend)) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		fn(t, &redisBackend{rdb: redistest.Real(t), prefix: redistest.Prefix(t)})
	})
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		m, rdb := redistest.Mini(t)
		b := &redisBackend{rdb: rdb, mini: m, now: time.Unix(1_700_000_000, 0), prefix: "idem"}
		m.SetTime(b.now)
		fn(t, b)
	})
}

// store returns a store on b's Redis under b's prefix.
func (b *redisBackend) store(opts ...Option) *Store {
	s := New(b.rdb, append([]Option{WithPrefix(b.prefix)}, opts...)...)
	if b.scriptOnly {
		s.pipe = nil
	}
	s.noSetGet.Store(b.twoCommands)
	// Verified up front, so that the tests see the transitions' commands
	// alone; a failure shows again at the first acquire.
	_ = s.verify(context.Background())
	return s
}

// key returns the Redis key of the record of k.
func (b *redisBackend) key(k string) string { return b.prefix + ":" + k }

// advance moves miniredis's clock (TIME) and its TTLs forward by d.
func (b *redisBackend) advance(d time.Duration) {
	b.now = b.now.Add(d)
	b.mini.SetTime(b.now)
	b.mini.FastForward(d)
}

// acquireAfter acquires req once the lease it meets, of length lease, has
// run out. miniredis's clock is moved past it; real Redis's clock cannot be
// moved, so acquire is polled until it stops answering conflict, bounded by
// a deadline rather than by sleeping.
func (b *redisBackend) acquireAfter(t *testing.T, s *Store, req idemstore.AcquireRequest, lease time.Duration) idemstore.Acquisition {
	t.Helper()
	if b.mini != nil {
		b.advance(lease + time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		acq := mustAcquire(t, s, req)
		if acq.Outcome != idemstore.OutcomeConflict {
			return acq
		}
		if b.mini != nil || time.Now().After(deadline) {
			t.Fatalf("lease of %v has not run out: remaining %v", lease, acq.Remaining)
		}
	}
}

// waitPastDeadline returns once the lease of the record of k has run out,
// without touching the record: the lease left is the record's PTTL minus its
// abandoned TTL (lua/lua.go). miniredis's clock is moved past it; real
// Redis's PTTL is polled, bounded by a deadline.
func (b *redisBackend) waitPastDeadline(t *testing.T, k string) {
	t.Helper()
	abandoned := time.Duration(b.snapshot(t, k).abandoned) * time.Millisecond
	if b.mini != nil {
		b.advance(b.pttl(t, k) - abandoned + time.Millisecond)
		return
	}
	stop := time.Now().Add(5 * time.Second)
	for {
		left := b.pttl(t, k) - abandoned
		if left <= 0 {
			return
		}
		if time.Now().After(stop) {
			t.Fatalf("lease of %s never ran out: %v left", k, left)
		}
	}
}

// raw returns the stored string of the record of k.
func (b *redisBackend) raw(t *testing.T, k string) string {
	t.Helper()
	v, err := b.rdb.Get(context.Background(), b.key(k)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// snapshot returns the decoded record of k.
func (b *redisBackend) snapshot(t *testing.T, k string) storedRecord {
	t.Helper()
	r, err := parseRecord(b.raw(t, k))
	if err != nil {
		t.Fatalf("record of %s: %v", k, err)
	}
	return r
}

// pttl returns the remaining time to live of the record of k.
func (b *redisBackend) pttl(t *testing.T, k string) time.Duration {
	t.Helper()
	d, err := b.rdb.PTTL(context.Background(), b.key(k)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustAcquire(t *testing.T, s *Store, req idemstore.AcquireRequest) idemstore.Acquisition {
	t.Helper()
	acq, err := s.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire %s: %v", req.Token, err)
	}
	return acq
}

func wantOutcome(t *testing.T, acq idemstore.Acquisition, want idemstore.Outcome, fence int64) {
	t.Helper()
	if acq.Outcome != want || acq.Fence != fence {
		t.Fatalf("got outcome %d fence %d, want outcome %d fence %d", acq.Outcome, acq.Fence, want, fence)
	}
}

func mustComplete(t *testing.T, s *Store, key, token string, rec *idemstore.Record) {
	t.Helper()
	if err := s.Complete(context.Background(), key, token, rec, time.Hour); err != nil {
		t.Fatalf("complete %s: %v", token, err)
	}
}

func wantNotOwner(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("%s: got %v, want idemstore.ErrNotOwner", what, err)
	}
}

// wantReplay acquires k with fp and checks that it replays want.
func wantReplay(t *testing.T, s *Store, k, fp string, want *idemstore.Record) {
	t.Helper()
	acq := mustAcquire(t, s, idemstore.AcquireRequest{Key: k, Token: "replayer", Fingerprint: fp, Lease: time.Minute})
	if acq.Outcome != idemstore.OutcomeReplay {
		t.Fatalf("got outcome %d, want replay", acq.Outcome)
	}
	got := acq.Record
	if got.Status != want.Status || got.BodyOmitted != want.BodyOmitted || string(got.Body) != string(want.Body) {
		t.Fatalf("replayed %d %q omitted=%v, want %d %q omitted=%v",
			got.Status, got.Body, got.BodyOmitted, want.Status, want.Body, want.BodyOmitted)
	}
	wantHeader := want.Header
	if wantHeader == nil {
		wantHeader = http.Header{}
	}
	if !reflect.DeepEqual(got.Header, wantHeader) {
		t.Fatalf("replayed headers %v, want %v", got.Header, wantHeader)
	}
}

func TestRedisStoreUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	ctx := context.Background()

	_, acqErr := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "f"})
	errs := map[string]error{
		"acquire":  acqErr,
		"complete": s.Complete(ctx, "k", "t", &idemstore.Record{Status: 200}, 0),
		"release":  s.Release(ctx, "k", "t"),
		"extend":   s.Extend(ctx, "k", "t", 0),
	}
	for op, err := range errs {
		if !errors.Is(err, idemstore.ErrStoreUnavailable) {
			t.Errorf("%s: got %v, want idemstore.ErrStoreUnavailable", op, err)
		}
		var se *idemstore.StoreError
		if !errors.As(err, &se) || se.Op != op {
			t.Errorf("%s: got %#v, want a *idemstore.StoreError of that op", op, err)
		}
		var ne *net.OpError
		if !errors.As(err, &ne) {
			t.Errorf("%s: cause %v is not the dial error", op, err)
		}
	}
}

func TestRedisStoreRejectsBadArguments(t *testing.T) {
	_, rdb := redistest.Mini(t)
	s := New(rdb)
	ctx := context.Background()
	_, negLease := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Lease: -time.Second})
	_, noToken := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k"})
	_, noKey := s.Acquire(ctx, idemstore.AcquireRequest{Token: "t"})
	errs := map[string]error{
		"negative lease":     negLease,
		"empty token":        noToken,
		"empty key":          noKey,
		"nil record":         s.Complete(ctx, "k", "t", nil, 0),
		"status 0":           s.Complete(ctx, "k", "t", &idemstore.Record{}, 0),
		"negative retention": s.Complete(ctx, "k", "t", &idemstore.Record{Status: 200}, -1),
		"release no token":   s.Release(ctx, "k", ""),
		"extend negative":    s.Extend(ctx, "k", "t", -1),
	}
	for name, err := range errs {
		if err == nil || errors.Is(err, idemstore.ErrStoreUnavailable) || errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("%s: got %v, want an argument error", name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "idem: ") {
			t.Errorf("%s: error %q lacks the idem: prefix", name, err)
		}
	}
}

func TestRedisStoreConcurrentAcquireHasOneOwner(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		s := b.store()
		const n = 16
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex // guards outcome
			outcomes = map[idemstore.Outcome]int{}
		)
		for i := range n {
			wg.Go(func() {
				token := "t" + string(rune('a'+i))
				acq, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: "k", Token: token, Fingerprint: "f", Lease: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				outcomes[acq.Outcome]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if outcomes[idemstore.OutcomeFirstRun] != 1 || outcomes[idemstore.OutcomeConflict] != n-1 {
			t.Fatalf("outcomes %v, want one proceed and %d conflicts", outcomes, n-1)
		}
	})
}

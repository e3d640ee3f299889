package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// The promise on production Redis: a store that may evict records or that
// denies the scripts is refused (503 store-misconfigured, the handler never
// runs), a blip at completion is survived, and a hung Redis costs a request
// the store timeout. Each test starts redis-server set up the way it needs.

// configuredServer starts redis-server with extra arguments (skipped
// without redis-server, failed under CI=true).
func configuredServer(t *testing.T, args ...string) *redisproc.Server {
	t.Helper()
	return faultServerWith(t, redisproc.Options{Args: args})
}

// logBuffer is a slog destination tests read; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines that contain every one of words.
func (l *logBuffer) lines(words ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// appUser is the ACL user the application connects as; aclSet changes its
// rules through the default user.
const appUser, appPass = "app", "app-secret"

func aclSet(t *testing.T, admin redis.UniversalClient, rules ...string) {
	t.Helper()
	args := []any{"ACL", "SETUSER", appUser}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Errorf("ACL SETUSER %v: %v", rules, err) // not Fatal: handlers call it on their own goroutine
	}
}

// appClient is a client of addr as appUser, with context deadlines on.
func appClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: appUser, Password: appPass, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// wantRefused sends n new keys through h and checks each is answered 503
// store-misconfigured without running the handler.
func wantRefused(t *testing.T, h http.Handler, runs *faultRuns, prefix string, n int) {
	t.Helper()
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		w := faultPost(h, key)
		if w.Code != http.StatusServiceUnavailable || faultCode(w) != idemop.CodeStoreMisconfigured {
			t.Errorf("%s: %d %s; want 503 store-misconfigured", key, w.Code, strings.TrimSpace(w.Body.String()))
		}
		if got := w.Header().Get("Content-Type"); got != idemop.ProblemContentType {
			t.Errorf("%s: Content-Type %q, want %s", key, got, idemop.ProblemContentType)
		}
		if r := runs.of(key); r != 0 {
			t.Errorf("%s: the handler ran %d times on a misconfigured store", key, r)
		}
	}
}

// waitRefused sends new keys through h until one is answered 503
// store-misconfigured without running the handler, for at most 10 s.
func waitRefused(t *testing.T, h http.Handler, runs *faultRuns, what string) {
	t.Helper()
	n := 0
	faultEventually(t, 10*time.Second, what, func() bool {
		n++
		key := fmt.Sprintf("during-%d", n)
		w := faultPost(h, key)
		return w.Code == http.StatusServiceUnavailable && faultCode(w) == idemop.CodeStoreMisconfigured && runs.of(key) == 0
	})
}

// TestMisconfiguredEvictingPolicy: with maxmemory set and an evicting
// policy, every idempotent request is refused 503 store-misconfigured and
// no handler runs, fail-open or not; the log says why once; Check says what
// to change, also where CONFIG is renamed away (read from INFO memory).
// WithEvictionRunsMayRepeat accepts the policy. A policy changed under the
// running service is seen within the check interval, both ways.
func TestMisconfiguredEvictingPolicy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		args   []string
		policy string
	}{
		{"allkeys-lru", []string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"}, "allkeys-lru"},
		{"volatile-ttl", []string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-ttl"}, "volatile-ttl"},
		{"CONFIG renamed", []string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lfu", "--rename-command", "CONFIG", ""}, "allkeys-lfu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := configuredServer(t, tc.args...)
			rdb := faultClient(t, srv.Addr())
			for _, failOpen := range []bool{false, true} {
				var logs logBuffer
				runs := newFaultRuns()
				store := redisstore.New(rdb, redisstore.WithPrefix("evict"))
				h := idem.NewEngine(store, idem.WithFailOpen(failOpen), idem.WithLogger(logs.logger())).
					Middleware(faultOp)(faultHandler(runs, nil))
				wantRefused(t, h, runs, fmt.Sprintf("fail-open-%v", failOpen), 5)
				if got := logs.lines("store misconfigured", "maxmemory-policy is "+tc.policy, "noeviction"); len(got) != 1 {
					t.Errorf("fail-open %v: %d log lines saying why, want 1:\n%s", failOpen, len(got), logs.lines())
				}
				err := store.Check(ctx)
				if !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), tc.policy) ||
					!strings.Contains(err.Error(), "WithEvictionRunsMayRepeat") {
					t.Errorf("Check: %v; want ErrStoreMisconfigured naming %s and the option", err, tc.policy)
				}
			}
			// Accepted explicitly: it runs.
			runs := newFaultRuns()
			store := redisstore.New(rdb, redisstore.WithPrefix("evict"), redisstore.WithEvictionRunsMayRepeat())
			if err := store.Check(ctx); err != nil {
				t.Errorf("Check with eviction accepted: %v", err)
			}
			h := idem.NewEngine(store).Middleware(faultOp)(faultHandler(runs, nil))
			if w := faultPost(h, "accepted"); w.Code != http.StatusCreated || runs.of("accepted") != 1 {
				t.Errorf("eviction accepted: %d %s, %d runs; want 201 and 1", w.Code, w.Body, runs.of("accepted"))
			}
		})
	}

	t.Run("changed at run time", func(t *testing.T) {
		srv := configuredServer(t, "--maxmemory", "64mb")
		rdb := faultClient(t, srv.Addr())
		var logs logBuffer
		runs := newFaultRuns()
		store := redisstore.New(rdb, redisstore.WithPrefix("evict"), redisstore.WithCheckInterval(50*time.Millisecond))
		if err := store.Check(ctx); err != nil {
			t.Fatalf("Check on noeviction: %v", err)
		}
		h := idem.NewEngine(store, idem.WithLogger(logs.logger())).Middleware(faultOp)(faultHandler(runs, nil))
		if w := faultPost(h, "before"); w.Code != http.StatusCreated {
			t.Fatalf("before: %d %s", w.Code, w.Body)
		}
		if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatal(err)
		}
		waitRefused(t, h, runs, "the evicting policy refused")
		n := 0
		wantRefused(t, h, runs, "refused", 3)
		if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			t.Fatal(err)
		}
		faultEventually(t, 10*time.Second, "noeviction accepted again", func() bool {
			n++
			return faultPost(h, fmt.Sprintf("after-%d", n)).Code == http.StatusCreated
		})
		if got := logs.lines("store misconfigured", "allkeys-lru"); len(got) != 1 {
			t.Errorf("%d log lines about the policy, want 1:\n%s", len(got), logs.lines())
		}
		if got := logs.lines("verified", "run again"); len(got) != 1 {
			t.Errorf("%d log lines about the recovery, want 1:\n%s", len(got), logs.lines())
		}
	})
}

// TestMisconfiguredScriptsDenied: a Redis user denied EVAL and EVALSHA (or
// all of scripting) gets no handler run at all: the first request is
// refused 503 store-misconfigured before anything is written, fail-open or
// not, the log says once what to grant, and Check and Do say so too.
func TestMisconfiguredScriptsDenied(t *testing.T) {
	ctx := context.Background()
	srv := configuredServer(t)
	admin := faultClient(t, srv.Addr())
	for _, rules := range [][]string{{"-eval", "-evalsha"}, {"-@scripting"}} {
		t.Run(strings.Join(rules, ""), func(t *testing.T) {
			aclSet(t, admin, append([]string{"reset", "on", ">" + appPass, "~*", "&*", "+@all"}, rules...)...)
			rdb := appClient(t, srv.Addr())
			for _, failOpen := range []bool{false, true} {
				var logs logBuffer
				runs := newFaultRuns()
				prefix := fmt.Sprintf("acl%s%v", strings.Join(rules, ""), failOpen)
				store := redisstore.New(rdb, redisstore.WithPrefix(prefix))
				h := idem.NewEngine(store, idem.WithFailOpen(failOpen), idem.WithLogger(logs.logger())).
					Middleware(faultOp)(faultHandler(runs, nil))
				wantRefused(t, h, runs, "k", 5)
				if got := logs.lines("store misconfigured", "scripts are denied", "NOPERM", "+evalsha"); len(got) != 1 {
					t.Errorf("fail-open %v: %d log lines saying why, want 1:\n%s", failOpen, len(got), logs.lines())
				}
				if n, err := admin.Keys(ctx, prefix+":*").Result(); err != nil || len(n) != 0 {
					t.Errorf("records written on a store that denies scripts: %v %v", n, err)
				}
				if err := store.Check(ctx); !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "NOPERM") {
					t.Errorf("Check: %v; want ErrStoreMisconfigured with the NOPERM", err)
				}
			}
			ran := false
			_, _, err := idem.Do(ctx, redisstore.New(rdb, redisstore.WithPrefix("acl-do")), &faultOp, "msg-1", []byte("x"),
				func(context.Context) ([]byte, error) { ran = true; return nil, nil }, idem.WithFailOpen(true))
			if !errors.Is(err, idemstore.ErrStoreMisconfigured) || ran {
				t.Errorf("Do: %v, ran %v; want ErrStoreMisconfigured without running", err, ran)
			}
		})
	}
}

// TestHungRedisAnswersWithinStoreTimeout: a Redis stopped with SIGSTOP
// (connections open, nothing answered) costs a request the store timeout,
// not go-redis's ReadTimeout and retries, when the client is built with
// ContextTimeoutEnabled, as Check insists.
func TestHungRedisAnswersWithinStoreTimeout(t *testing.T) {
	ctx := context.Background()
	srv := configuredServer(t)
	// Socket timeouts far above the store timeout: without the context's
	// deadline a call to the hung server would wait 10 s per try.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb, redisstore.WithPrefix("hung"))
	if err := store.Check(ctx); err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	runs := newFaultRuns()
	h := idem.NewEngine(store, idem.WithStoreTimeout(timeout)).Middleware(faultOp)(faultHandler(runs, nil))
	if w := faultPost(h, "warm"); w.Code != http.StatusCreated {
		t.Fatalf("warm-up: %d %s", w.Code, w.Body)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Resume()
		}
	}()
	for i := range 3 {
		key := fmt.Sprintf("hung-%d", i)
		began := time.Now()
		w := faultPost(h, key)
		took := time.Since(began)
		if w.Code != http.StatusServiceUnavailable || faultCode(w) != idemop.CodeStoreUnavailable || runs.of(key) != 0 {
			t.Errorf("%s on a hung Redis: %d %s, %d runs; want 503 store-unavailable and no run", key, w.Code, w.Body, runs.of(key))
		}
		// The bound only tells the store timeout (0.3 s) from the socket
		// timeouts (10 s); it leaves a loaded machine ample room.
		if took > 5*time.Second {
			t.Errorf("%s answered after %v; want about the store timeout %v", key, took, timeout)
		}
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	faultEventually(t, 10*time.Second, "requests run again after SIGCONT", func() bool {
		return faultPost(h, "after").Code == http.StatusCreated
	})

	// A client that ignores context deadlines is refused by Check.
	plain := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = plain.Close() })
	if err := redisstore.New(plain).Check(ctx); !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
		t.Errorf("Check of a client without ContextTimeoutEnabled: %v; want ErrStoreMisconfigured naming the option", err)
	}
}

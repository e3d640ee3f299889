package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// shortLease is a lease tests wait out: miniredis moves its clock past it,
// real Redis is polled until it ran out.
const shortLease = 5 * time.Millisecond

// redisTransitions is the state-machine table, run against every backend.
var redisTransitions = []struct {
	name string
	run  func(t *testing.T, b *redisBackend)
}{
	{"proceed then conflict", func(t *testing.T, b *redisBackend) {
		s := b.store(WithAbandonedTTL(time.Hour))
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Minute}), idemstore.OutcomeFirstRun, 1)
		acq := mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f", Lease: time.Minute})
		wantOutcome(t, acq, idemstore.OutcomeConflict, 0)
		if acq.Remaining <= 50*time.Second || acq.Remaining > time.Minute {
			t.Errorf("remaining %v, want just under 1m", acq.Remaining)
		}
		if ttl := b.pttl(t, "k"); ttl <= time.Hour || ttl > time.Hour+time.Minute {
			t.Errorf("in-progress TTL %v, want lease + abandoned TTL", ttl)
		}
	}},
	{"mismatch leaves the record untouched", func(t *testing.T, b *redisBackend) {
		s := b.store()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Minute})
		before := b.raw(t, "k")
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "g", Lease: time.Minute}), idemstore.OutcomeMismatch, 0)
		if after := b.raw(t, "k"); before != after {
			t.Fatalf("in-progress record changed by a mismatch: %v -> %v", before, after)
		}
		rec := &idemstore.Record{Status: 201, Body: []byte("created")}
		mustComplete(t, s, "k", "a", rec)
		before = b.raw(t, "k")
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "c", Fingerprint: "g", Lease: time.Minute}), idemstore.OutcomeMismatch, 0)
		if after := b.raw(t, "k"); before != after {
			t.Fatalf("completed record changed by a mismatch: %v -> %v", before, after)
		}
		wantReplay(t, s, "k", "f", rec)
	}},
	{"complete then replay", func(t *testing.T, b *redisBackend) {
		s := b.store()
		rec := &idemstore.Record{
			Status: 201,
			Header: http.Header{"Content-Type": {"application/json"}, "Link": {"<a>; rel=x", "<b>; rel=y"}},
			Body:   []byte("{\"id\":1}\x00\xff\xfe binary"),
		}
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Minute})
		if err := s.Complete(context.Background(), "k", "a", rec, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		wantReplay(t, s, "k", "f", rec)
		wantReplay(t, s, "k", "f", rec)
		if ttl := b.pttl(t, "k"); ttl <= 2*time.Hour-time.Minute || ttl > 2*time.Hour {
			t.Errorf("completed TTL %v, want the retention", ttl)
		}
		if r := b.snapshot(t, "k"); r.format != 3 || r.state != stateCompleted || r.fingerprint != storedFingerprint("f") || r.owner != "" || r.fence != 0 {
			t.Errorf("completed record %+v, want completed under fingerprint f, without its lease", r)
		}
		wantNotOwner(t, "second complete", s.Complete(context.Background(), "k", "a", &idemstore.Record{Status: 500}, time.Hour))
		wantNotOwner(t, "extend after complete", s.Extend(context.Background(), "k", "a", time.Minute))
		wantNotOwner(t, "release after complete", s.Release(context.Background(), "k", "a"))
		wantReplay(t, s, "k", "f", rec)
	}},
	{"empty and omitted bodies", func(t *testing.T, b *redisBackend) {
		s := b.store()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "empty", Token: "a", Fingerprint: "f"})
		mustComplete(t, s, "empty", "a", &idemstore.Record{Status: 204})
		wantReplay(t, s, "empty", "f", &idemstore.Record{Status: 204})
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "omitted", Token: "a", Fingerprint: "f"})
		mustComplete(t, s, "omitted", "a", &idemstore.Record{Status: 200, Body: []byte("too long"), BodyOmitted: true})
		wantReplay(t, s, "omitted", "f", &idemstore.Record{Status: 200, BodyOmitted: true})
	}},
	{"stale owner is refused", func(t *testing.T, b *redisBackend) {
		s := b.store()
		ctx := context.Background()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: shortLease})
		wantOutcome(t, b.acquireAfter(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f", Lease: time.Minute}, shortLease), idemstore.OutcomeRecovered, 2)
		wantNotOwner(t, "stale extend", s.Extend(ctx, "k", "a", time.Minute))
		wantNotOwner(t, "stale complete", s.Complete(ctx, "k", "a", &idemstore.Record{Status: 200, Body: []byte("stale")}, time.Hour))
		wantNotOwner(t, "stale release", s.Release(ctx, "k", "a"))
		newer := &idemstore.Record{Status: 201, Body: []byte("newer")}
		mustComplete(t, s, "k", "b", newer)
		wantNotOwner(t, "stale complete after newer", s.Complete(ctx, "k", "a", &idemstore.Record{Status: 200}, time.Hour))
		wantReplay(t, s, "k", "f", newer)
	}},
	{"every takeover increments the fence", func(t *testing.T, b *redisBackend) {
		s := b.store()
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: shortLease}), idemstore.OutcomeFirstRun, 1)
		wantOutcome(t, b.acquireAfter(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f", Lease: shortLease}, shortLease), idemstore.OutcomeRecovered, 2)
		wantOutcome(t, b.acquireAfter(t, s, idemstore.AcquireRequest{Key: "k", Token: "c", Fingerprint: "f", Lease: time.Minute}, shortLease), idemstore.OutcomeRecovered, 3)
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "d", Fingerprint: "f", Lease: time.Minute}), idemstore.OutcomeConflict, 0)
	}},
	{"an expired owner not yet taken over may still finish", func(t *testing.T, b *redisBackend) {
		s := b.store()
		ctx := context.Background()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: shortLease})
		b.waitPastDeadline(t, "k")
		if err := s.Extend(ctx, "k", "a", shortLease); err != nil {
			t.Fatalf("extend after the deadline: %v", err)
		}
		b.waitPastDeadline(t, "k")
		rec := &idemstore.Record{Status: 200, Body: []byte("late")}
		mustComplete(t, s, "k", "a", rec)
		wantReplay(t, s, "k", "f", rec)
	}},
	{"an abandoned record expires", func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		if b.mini == nil {
			// Real Redis: a 1ms lease and TTL, polled until the key is gone.
			s := b.store(WithAbandonedTTL(time.Millisecond))
			mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Millisecond})
			for stop := time.Now().Add(5 * time.Second); b.rdb.Exists(ctx, b.key("k")).Val() == 1; {
				if time.Now().After(stop) {
					t.Fatalf("abandoned record never expired: TTL %v", b.pttl(t, "k"))
				}
			}
			wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f"}), idemstore.OutcomeFirstRun, 1)
			return
		}
		s := b.store(WithAbandonedTTL(time.Minute))
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Second})
		b.advance(time.Second + time.Minute - time.Millisecond)
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f", Lease: time.Second}), idemstore.OutcomeRecovered, 2)
		b.advance(time.Second + time.Minute)
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "c", Fingerprint: "f", Lease: time.Second}), idemstore.OutcomeFirstRun, 1)
	}},
	{"release lets a retry proceed", func(t *testing.T, b *redisBackend) {
		s := b.store()
		ctx := context.Background()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Minute})
		wantNotOwner(t, "release by another token", s.Release(ctx, "k", "b"))
		if err := s.Release(ctx, "k", "a"); err != nil {
			t.Fatal(err)
		}
		if n := b.rdb.Exists(ctx, b.key("k")).Val(); n != 0 {
			t.Fatalf("released record still exists")
		}
		wantNotOwner(t, "release of an absent record", s.Release(ctx, "k", "a"))
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "g", Lease: time.Minute}), idemstore.OutcomeFirstRun, 1)
	}},
	{"extend keeps the lease alive", func(t *testing.T, b *redisBackend) {
		s := b.store(WithAbandonedTTL(time.Minute))
		ctx := context.Background()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: 100 * time.Millisecond})
		wantNotOwner(t, "extend by another token", s.Extend(ctx, "k", "b", time.Hour))
		if b.mini != nil {
			b.advance(90 * time.Millisecond)
		}
		if err := s.Extend(ctx, "k", "a", 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		if b.mini != nil {
			b.advance(time.Second) // well past the first lease
		}
		acq := mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f", Lease: time.Minute})
		if acq.Outcome != idemstore.OutcomeConflict || acq.Remaining < 9*time.Minute {
			t.Fatalf("after extend: outcome %d remaining %v, want conflict near 10m", acq.Outcome, acq.Remaining)
		}
		if ttl := b.pttl(t, "k"); ttl < 10*time.Minute {
			t.Errorf("TTL %v after extend, want at least the new lease", ttl)
		}
		wantNotOwner(t, "extend of an absent record", s.Extend(ctx, "gone", "a", time.Minute))
	}},
	{"script cache flushed", func(t *testing.T, b *redisBackend) {
		s := b.store()
		if b.mini != nil {
			if err := b.rdb.ScriptFlush(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			// SCRIPT FLUSH would disturb tests sharing the server; a
			// script it has never seen meets the same NOSCRIPT.
			var nonce [8]byte
			rand.Read(nonce[:])
			s.acquire = redis.NewScript(lua.Acquire + "\n-- " + hex.EncodeToString(nonce[:]) + "\n")
		}
		// The first acquire that runs the script: a conflict, or with the
		// script alone the very first.
		calls := redistest.CountCommands(b.rdb)
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f"}), idemstore.OutcomeFirstRun, 1)
		if !b.scriptOnly {
			calls.Reset()
			wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f"}), idemstore.OutcomeConflict, 0)
		}
		if got := calls.Calls(); got["evalsha"] != 1 || got["eval"] != 1 {
			t.Errorf("commands %v, want one EVALSHA answered NOSCRIPT, then one EVAL", got)
		}
		calls.Reset()
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "c", Fingerprint: "f"}), idemstore.OutcomeConflict, 0)
		if got := calls.Calls(); got["evalsha"] != 1 || got["eval"] != 0 {
			t.Errorf("commands %v, want the loaded script run by EVALSHA alone", got)
		}
	}},
	{"owner scripts unknown to the server", func(t *testing.T, b *redisBackend) {
		// The owner-only scripts go as EVALSHA commands of the store's own
		// making (evalsha); a server that answers NOSCRIPT still runs them.
		s := b.store()
		var nonce [8]byte
		rand.Read(nonce[:])
		unseen := "\n-- " + hex.EncodeToString(nonce[:]) + "\n"
		s.complete = redis.NewScript(lua.Complete + unseen)
		s.release = redis.NewScript(lua.Release + unseen)
		s.extend = redis.NewScript(lua.Extend + unseen)
		ctx := context.Background()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Minute})
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "r", Token: "a", Fingerprint: "f", Lease: time.Minute})
		calls := redistest.CountCommands(b.rdb)
		if err := s.Extend(ctx, "k", "a", time.Hour); err != nil {
			t.Fatal(err)
		}
		rec := &idemstore.Record{Status: 201, Body: []byte("created")}
		mustComplete(t, s, "k", "a", rec)
		if err := s.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
		if got := calls.Calls(); got["evalsha"] != 3 || got["eval"] != 3 {
			t.Errorf("commands %v, want three EVALSHA answered NOSCRIPT, each followed by EVAL", got)
		}
		calls.Reset()
		wantNotOwner(t, "second complete", s.Complete(ctx, "k", "a", rec, time.Hour))
		wantNotOwner(t, "second release", s.Release(ctx, "r", "a"))
		if got := calls.Calls(); got["evalsha"] != 2 || got["eval"] != 0 {
			t.Errorf("commands %v, want the loaded scripts run by EVALSHA alone", got)
		}
		wantReplay(t, s, "k", "f", rec)
	}},
	{"SET NX writes the record the script writes", func(t *testing.T, b *redisBackend) {
		viaSet := b.store(WithAbandonedTTL(time.Hour))
		viaScript := b.store(WithAbandonedTTL(time.Hour))
		viaScript.pipe = nil
		req := idemstore.AcquireRequest{Token: "owner-a", Fingerprint: "f00d", Lease: time.Minute}
		req.Key = "set"
		wantOutcome(t, mustAcquire(t, viaSet, req), idemstore.OutcomeFirstRun, 1)
		req.Key = "script"
		wantOutcome(t, mustAcquire(t, viaScript, req), idemstore.OutcomeFirstRun, 1)
		if set, script := b.raw(t, "set"), b.raw(t, "script"); set != script {
			t.Errorf("SET NX wrote %q, the script %q", set, script)
		}
		for _, k := range []string{"set", "script"} {
			if ttl := b.pttl(t, k); ttl <= time.Hour || ttl > time.Hour+time.Minute {
				t.Errorf("%s: in-progress TTL %v, want lease + abandoned TTL", k, ttl)
			}
		}
		// Each store finishes what the other began.
		mustComplete(t, viaScript, "set", "owner-a", &idemstore.Record{Status: 201})
		mustComplete(t, viaSet, "script", "owner-a", &idemstore.Record{Status: 201})
		wantReplay(t, viaScript, "set", "f00d", &idemstore.Record{Status: 201})
		wantReplay(t, viaSet, "script", "f00d", &idemstore.Record{Status: 201})
	}},
	{"round trips", func(t *testing.T, b *redisBackend) {
		s := b.store()
		ctx := context.Background()
		if err := s.LoadScripts(ctx); err != nil {
			t.Fatal(err)
		}
		calls := redistest.CountCommands(b.rdb)
		trips := func(what string, want int64) {
			t.Helper()
			if got := calls.RoundTrips(); got != want {
				t.Errorf("%s: %d round trips (%v), want %d", what, got, calls.Calls(), want)
			}
			calls.Reset()
		}
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f"})
		mustComplete(t, s, "k", "a", &idemstore.Record{Status: 200})
		trips("first request", 2)
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f"})
		trips("replay", 1)
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "g"})
		trips("mismatch", 1)
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "running", Token: "a", Fingerprint: "f"})
		calls.Reset()
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "running", Token: "b", Fingerprint: "f"})
		if b.scriptOnly {
			trips("conflict", 1)
		} else {
			trips("conflict (SET, then the script)", 2)
		}
		mustAcquire(t, s, idemstore.AcquireRequest{Key: "running", Token: "b", Fingerprint: "g"})
		trips("mismatch in progress", 1)
		if err := s.Extend(ctx, "running", "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		trips("extend", 1)
		if err := s.Release(ctx, "running", "a"); err != nil {
			t.Fatal(err)
		}
		trips("release", 1)
	}},
	{"compression", func(t *testing.T, b *redisBackend) {
		s := b.store(WithCompression(64))
		big := &idemstore.Record{Status: 200, Body: bytes.Repeat([]byte(`{"name":"rex","kind":"dog"},`), 400)}
		noise := make([]byte, 1024)
		rand.Read(noise)
		for k, rec := range map[string]*idemstore.Record{"big": big, "noise": {Status: 200, Body: noise}, "small": {Status: 200, Body: []byte("short")}} {
			mustAcquire(t, s, idemstore.AcquireRequest{Key: k, Token: "a", Fingerprint: "f"})
			mustComplete(t, s, k, "a", rec)
			wantReplay(t, s, k, "f", rec)
		}
		if r := b.snapshot(t, "big"); r.flags != flagGzip || r.storedBody >= len(big.Body)/10 {
			t.Errorf("big body stored with flags %d in %d bytes, want gzip and much smaller", r.flags, r.storedBody)
		}
		for _, k := range []string{"noise", "small"} {
			if r := b.snapshot(t, k); r.flags != 0 || r.storedBody != len(r.result.Body) {
				t.Errorf("%s body stored with flags %d in %d bytes, want 0 (raw)", k, r.flags, r.storedBody)
			}
		}
		// The default compresses above DefaultCompressOver; 0 turns it off.
		for k, want := range map[string]struct {
			s     *Store
			flags int64
		}{"default": {b.store(), flagGzip}, "off": {b.store(WithCompression(0)), 0}} {
			mustAcquire(t, want.s, idemstore.AcquireRequest{Key: k, Token: "a", Fingerprint: "f"})
			mustComplete(t, want.s, k, "a", big)
			wantReplay(t, want.s, k, "f", big)
			if r := b.snapshot(t, k); r.flags != want.flags {
				t.Errorf("%s store: %d-byte body stored with flags %d, want %d", k, len(big.Body), r.flags, want.flags)
			}
		}
	}},
	{"prefix", func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		mustAcquire(t, New(b.rdb, WithPrefix(b.prefix+"-x")), idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f"})
		if b.rdb.Exists(ctx, b.prefix+"-x:k").Val() != 1 {
			t.Error("record not at prefix:key")
		}
		mustAcquire(t, New(b.rdb, WithPrefix("")), idemstore.AcquireRequest{Key: b.prefix + "-bare", Token: "a", Fingerprint: "f"})
		if b.rdb.Exists(ctx, b.prefix+"-bare").Val() != 1 {
			t.Error("record with an empty prefix not at key")
		}
	}},
	{"corrupt records are store errors", func(t *testing.T, b *redisBackend) {
		s := b.store()
		ctx := context.Background()
		corrupt := map[string]string{ // record -> what the error must say
			"x":                                       "IDEMCORRUPT",
			"I\nf\n":                                  "IDEMCORRUPT",
			"I\nf\na\n1\n":                            "IDEMCORRUPT",
			"I\nf\na\nx\n1":                           "IDEMCORRUPT",
			"P\nf\na\n1\n1":                           "IDEMCORRUPT",
			"C\nf\n":                                  "malformed acquire reply",
			"C\nf\n200 0 6\nX: 1\n":                   "malformed acquire reply",
			"C\nf\n42 0 0\nbody":                      "malformed acquire reply",
			"C\nf\n200 2 0\nnot gzip":                 "malformed acquire reply",
			"C\nf\n200 1 0\nkept body":                "malformed acquire reply",
			"i" + storedFingerprint("f"):              "IDEMCORRUPT",
			"i" + storedFingerprint("f") + "a\nx\n1":  "IDEMCORRUPT",
			"i" + storedFingerprint("f") + "a\n1\n":   "IDEMCORRUPT",
			"c" + storedFingerprint("f"):              "IDEMCORRUPT",
			"c" + storedFingerprint("f") + "\x00":     "malformed acquire reply",
			"c" + storedFingerprint("f") + "2 \x80":   "malformed acquire reply",
			"c" + storedFingerprint("f") + "2 Bgzip?": "malformed acquire reply",
		}
		for v, want := range corrupt {
			b.rdb.Set(ctx, b.key("corrupt"), v, time.Minute)
			_, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "corrupt", Token: "a", Fingerprint: "f"})
			var se *idemstore.StoreError
			if !errors.As(err, &se) || !errors.Is(err, idemstore.ErrStoreUnavailable) || !strings.Contains(err.Error(), want) {
				t.Errorf("record %q: got %v, want a idemstore.StoreError saying %s", v, err, want)
			}
			if got := b.raw(t, "corrupt"); got != v {
				t.Errorf("record %q changed to %q", v, got)
			}
			for op, err := range map[string]error{
				"complete": s.Complete(ctx, "corrupt", "a", &idemstore.Record{Status: 200}, time.Hour),
				"extend":   s.Extend(ctx, "corrupt", "a", time.Minute),
				"release":  s.Release(ctx, "corrupt", "a"),
			} {
				if !errors.Is(err, idemstore.ErrNotOwner) {
					t.Errorf("%s of record %q: got %v, want idemstore.ErrNotOwner", op, v, err)
				}
			}
		}
		// A key of another type, e.g. a hash: Redis's own WRONGTYPE.
		b.rdb.HSet(ctx, b.key("hash"), "state", "in_progress")
		_, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "hash", Token: "a", Fingerprint: "f"})
		if !errors.Is(err, idemstore.ErrStoreUnavailable) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("hash key: got %v, want a idemstore.StoreError saying WRONGTYPE", err)
		}
	}},
	{"tokens and fingerprints with a newline are refused", func(t *testing.T, b *redisBackend) {
		s := b.store()
		ctx := context.Background()
		for _, req := range []idemstore.AcquireRequest{
			{Key: "k", Token: "a\nb", Fingerprint: "f"},
			{Key: "k", Token: "a", Fingerprint: "f\ng"},
			{Key: "k", Token: "a", Fingerprint: ""},
		} {
			if _, err := s.Acquire(ctx, req); err == nil || errors.Is(err, idemstore.ErrStoreUnavailable) {
				t.Errorf("acquire %+v: got %v, want an argument error", req, err)
			}
		}
		if err := s.Complete(ctx, "k", "a\n", &idemstore.Record{Status: 200}, 0); err == nil || errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("complete with a newline in the token: got %v, want an argument error", err)
		}
		if n := b.rdb.Exists(ctx, b.key("k")).Val(); n != 0 {
			t.Error("a refused request wrote a record")
		}
	}},
}

// vanishAfterSet is a go-redis hook that plays the race acquire's plain
// commands can lose: the record exists when SET NX runs and is gone (its
// owner released it, or it expired) when GET runs. After a pipeline whose
// SET NX did not create the record, it deletes the record and answers the
// GET with nil, as Redis would have.
type vanishAfterSet struct {
	rdb      *redis.Client
	vanished atomic.Int64
}

func (*vanishAfterSet) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*vanishAfterSet) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *vanishAfterSet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) != 2 || cmds[0].Name() != "set" || cmds[1].Name() != "get" {
			return err
		}
		set, get := cmds[0].(*redis.BoolCmd), cmds[1].(*redis.StringCmd)
		if err == nil && !set.Val() {
			if derr := h.rdb.Del(ctx, get.Args()[1].(string)).Err(); derr != nil {
				return derr
			}
			get.SetVal("")
			get.SetErr(redis.Nil)
			h.vanished.Add(1)
		}
		return err
	}
}

// TestRedisStoreRecordGoneBeforeGet: on a server before Redis 7.0, when
// the record acquire's SET NX found is gone by its GET, acquire.lua
// decides, and creates the record afresh.
func TestRedisStoreRecordGoneBeforeGet(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		b.twoCommands = true
		s := b.store()
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f"}), idemstore.OutcomeFirstRun, 1)
		hook := &vanishAfterSet{rdb: redis.NewClient(b.rdb.Options())}
		t.Cleanup(func() { _ = hook.rdb.Close() })
		b.rdb.AddHook(hook)
		calls := redistest.CountCommands(b.rdb)
		wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "f"}), idemstore.OutcomeFirstRun, 1)
		if got := calls.Calls(); hook.vanished.Load() != 1 || got["set"] != 1 || got["get"] != 1 || got["evalsha"] != 1 {
			t.Errorf("vanished %d times, commands %v; want one SET NX and GET, then acquire.lua", hook.vanished.Load(), got)
		}
		want := inProgressRecord(storedFingerprint("f"), "b", 1, s.abandonedMS)
		if got := b.raw(t, "k"); got != want {
			t.Errorf("record %q, want %q: b's, created afresh", got, want)
		}
		if err := s.Release(context.Background(), "k", "a"); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("release by the vanished record's owner: %v, want idemstore.ErrNotOwner", err)
		}
	})
}

// TestRedisStoreTransitions runs the table against every backend three
// times: with acquire's SET NX GET first, with SET NX and GET first (a
// server before Redis 7.0), and with acquire.lua alone, as with a client
// that cannot pipeline.
func TestRedisStoreTransitions(t *testing.T) {
	for _, tc := range redisTransitions {
		t.Run(tc.name, func(t *testing.T) {
			eachRedisBackend(t, tc.run)
			t.Run("two-commands", func(t *testing.T) {
				eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
					b.twoCommands = true
					tc.run(t, b)
				})
			})
			t.Run("script-only", func(t *testing.T) {
				eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
					b.scriptOnly = true
					tc.run(t, b)
				})
			})
		})
	}
}

// TestAcquireBeforeRedis7: a server before Redis 7.0 answers SET with both
// NX and GET "ERR syntax error"; acquire then sends SET NX and GET, at
// once and from then on. miniredis plays that server (a pre-hook refuses
// the combination as Redis 6.2 does): none older than 7.0 is installable
// here.
func TestAcquireBeforeRedis7(t *testing.T) {
	m, rdb := redistest.Mini(t)
	var refused atomic.Int64
	m.Server().SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		if !strings.EqualFold(cmd, "set") {
			return false
		}
		var nx, get bool
		for _, a := range args[2:] {
			nx = nx || strings.EqualFold(a, "nx")
			get = get || strings.EqualFold(a, "get")
		}
		if nx && get {
			refused.Add(1)
			c.WriteError("ERR syntax error")
			return true
		}
		return false
	})
	s := New(rdb)
	_ = s.verify(context.Background())
	calls := redistest.CountCommands(rdb)
	wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "a", Fingerprint: "f", Lease: time.Minute}), idemstore.OutcomeFirstRun, 1)
	if got := calls.Calls(); refused.Load() != 1 || got["set"] != 2 || got["get"] != 1 {
		t.Errorf("refused %d times, commands %v; want SET NX GET refused, then SET NX and GET", refused.Load(), got)
	}
	calls.Reset()
	rec := &idemstore.Record{Status: 201, Body: []byte("created")}
	mustComplete(t, s, "k", "a", rec)
	wantReplay(t, s, "k", "f", rec)
	wantOutcome(t, mustAcquire(t, s, idemstore.AcquireRequest{Key: "k", Token: "b", Fingerprint: "g", Lease: time.Minute}), idemstore.OutcomeMismatch, 0)
	if got := calls.Calls(); refused.Load() != 1 || got["set"] != 2 || got["get"] != 2 {
		t.Errorf("refused %d times, then commands %v; want SET NX and GET alone after the first refusal", refused.Load(), got)
	}
}

package redisstore

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
)

// TestPreviousKeyTransitions: with and without pipelining, a record created
// at the current key defers to a record at the previous key: replayed,
// refused (mismatch), answered 409 while its lease lives, taken over (and
// deleted) once it lapsed; the record created at the current key is
// released in every case but the takeover. Without a previous key, or on a
// server that was empty at its first check, nothing else is read.
func TestPreviousKeyTransitions(t *testing.T) {
	for _, scriptOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipelined", true: "script-only"}[scriptOnly], func(t *testing.T) {
			eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
				b.scriptOnly = scriptOnly
				ctx := context.Background()
				const fp, other = "fp-1", "fp-2"
				prev := func(k string) string { return idem.PreviousRecordKey("shop", "CreateOrder", "", k) }
				cur := func(k string) string { return idem.RecordKeyIn("shop", "CreateOrder", "", k) }
				set := func(k, v string, ttl time.Duration) {
					t.Helper()
					if err := b.rdb.Set(ctx, b.key(k), v, ttl).Err(); err != nil {
						t.Fatal(err)
					}
				}
				rec := &idem.Record{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":1}`)}
				// As the previous version wrote them.
				set(prev("done"), "c"+storedFingerprint(fp)+string(encodeResult(rec, 0, false)), time.Hour)
				set(prev("busy"), inProgressRecord(storedFingerprint(fp), "old-owner", 1, 60_000), 90*time.Second)
				set(prev("lapsed"), inProgressRecord(storedFingerprint(fp), "old-owner", 1, 60_000), 30*time.Second)
				s := b.store()
				req := func(k, fp string) idem.AcquireRequest {
					return idem.AcquireRequest{Key: cur(k), PreviousKey: prev(k), Token: "new-owner", Fingerprint: fp, Lease: time.Minute}
				}
				gone := func(k string) {
					t.Helper()
					if n, err := b.rdb.Exists(ctx, b.key(k)).Result(); err != nil || n != 0 {
						t.Errorf("%s: exists %d, %v; want gone", k, n, err)
					}
				}

				acq := mustAcquire(t, s, req("done", fp))
				if acq.Outcome != idem.OutcomeReplay || !reflect.DeepEqual(acq.Record, rec) {
					t.Errorf("completed under the previous key: %+v %+v; want its replay", acq, acq.Record)
				}
				gone(cur("done"))
				wantOutcome(t, mustAcquire(t, s, req("done", other)), idem.OutcomeMismatch, 0)
				gone(cur("done"))

				if acq := mustAcquire(t, s, req("busy", fp)); acq.Outcome != idem.OutcomeConflict || acq.Remaining <= 0 {
					t.Errorf("live lease under the previous key: %+v; want conflict", acq)
				}
				gone(cur("busy"))
				if got := b.raw(t, prev("busy")); got != inProgressRecord(storedFingerprint(fp), "old-owner", 1, 60_000) {
					t.Errorf("the previous owner's record changed: %q", got)
				}

				wantOutcome(t, mustAcquire(t, s, req("lapsed", fp)), idem.OutcomeRecovered, 1)
				gone(prev("lapsed"))
				if r := b.snapshot(t, cur("lapsed")); r.state != stateInProgress || r.owner != "new-owner" || r.fence != 1 {
					t.Errorf("after the takeover, the current key holds %+v; want the new owner's lease", r)
				}

				wantOutcome(t, mustAcquire(t, s, req("new", fp)), idem.OutcomeFirstRun, 1)
				// Without a previous key, a record there is not read.
				set(prev("ignored"), "c"+storedFingerprint(fp)+string(encodeResult(rec, 0, false)), time.Hour)
				r := req("ignored", fp)
				r.PreviousKey = ""
				wantOutcome(t, mustAcquire(t, s, r), idem.OutcomeFirstRun, 1)
			})
		})
	}
}

// TestNoPreviousKeysOnANewServer: a store that found its server empty
// reads no previous key, whatever the engine asks.
func TestNoPreviousKeysOnANewServer(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		if b.mini == nil {
			t.Skip("REDIS_URL's server is shared, never empty")
		}
		ctx := context.Background()
		s := b.store() // checks the empty server: marker 0
		if since, known := s.KeyLayoutSince(); !known || !since.IsZero() {
			t.Fatalf("KeyLayoutSince = %v, %v; want zero, known", since, known)
		}
		rec := &idem.Record{Status: 201, Body: []byte(`{}`)}
		prev := idem.PreviousRecordKey("", "Op", "", "k")
		if err := b.rdb.Set(ctx, b.key(prev), "c"+storedFingerprint("fp")+string(encodeResult(rec, 0, false)), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		acq := mustAcquire(t, s, idem.AcquireRequest{Key: idem.RecordKey("Op", "", "k"), PreviousKey: prev, Token: "t", Fingerprint: "fp"})
		wantOutcome(t, acq, idem.OutcomeFirstRun, 1)
	})
}

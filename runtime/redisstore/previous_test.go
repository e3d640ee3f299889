package redisstore

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestPreviousKeyTransitions: with and without pipelining, during the
// rollout and after it, a record created at the current key defers to a
// record at the previous key: replayed, refused (mismatch), answered 409
// while its lease lives, taken over once it lapsed, with a fence above
// the lapsed owner's; the record created at the current key is released
// in every case but the takeover. During the rollout a new record is
// created under both keys and a takeover keeps both; after it, the
// previous key of a takeover is deleted and a new record has the current
// key alone. Without a previous key nothing else is read.
func TestPreviousKeyTransitions(t *testing.T) {
	for _, mode := range []struct {
		name    string
		since   time.Duration // the marker's age
		rollout bool
	}{{"rollout", time.Minute, true}, {"after the rollout", idemstore.PreviousLayoutRollout + time.Minute, false}} {
		for _, scriptOnly := range []bool{false, true} {
			t.Run(mode.name+"/"+map[bool]string{false: "pipelined", true: "script-only"}[scriptOnly], func(t *testing.T) {
				eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
					b.scriptOnly = scriptOnly
					ctx := context.Background()
					const fp, other = "fp-1", "fp-2"
					prev := func(k string) string { return idemstore.PreviousRecordKey("shop", "CreateOrder", "", k) }
					cur := func(k string) string { return idemstore.RecordKeyIn("shop", "CreateOrder", "", k) }
					set := func(k, v string, ttl time.Duration) {
						t.Helper()
						if err := b.rdb.Set(ctx, b.key(k), v, ttl).Err(); err != nil {
							t.Fatal(err)
						}
					}
					rec := &idemstore.Record{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":1}`)}
					// As the previous version wrote them.
					set(prev("done"), completedRecord(storedFingerprint(fp), rec, 0, false), time.Hour)
					set(prev("busy"), inProgressRecord(storedFingerprint(fp), "old-owner", 1, 60_000), 90*time.Second)
					set(prev("lapsed"), inProgressRecord(storedFingerprint(fp), "old-owner", 3, 60_000), 30*time.Second)
					s := b.store()
					s.layoutSince.Store(time.Now().Add(-mode.since).UnixMilli())
					req := func(k, fp string) idemstore.AcquireRequest {
						return idemstore.AcquireRequest{Key: cur(k), PreviousKey: prev(k), Token: "new-owner", Fingerprint: fp, Lease: time.Minute}
					}
					exists := func(k string, want bool) {
						t.Helper()
						if n, err := b.rdb.Exists(ctx, b.key(k)).Result(); err != nil || (n == 1) != want {
							t.Errorf("%s: exists %d, %v; want %v", k, n, err, want)
						}
					}

					acq := mustAcquire(t, s, req("done", fp))
					if acq.Outcome != idemstore.OutcomeReplay || !reflect.DeepEqual(acq.Record, rec) {
						t.Errorf("completed under the previous key: %+v %+v; want its replay", acq, acq.Record)
					}
					exists(cur("done"), false)
					wantOutcome(t, mustAcquire(t, s, req("done", other)), idemstore.OutcomeMismatch, 0)
					exists(cur("done"), false)

					if acq := mustAcquire(t, s, req("busy", fp)); acq.Outcome != idemstore.OutcomeConflict || acq.Remaining <= 0 {
						t.Errorf("live lease under the previous key: %+v; want conflict", acq)
					}
					exists(cur("busy"), false)
					if got := b.raw(t, prev("busy")); got != inProgressRecord(storedFingerprint(fp), "old-owner", 1, 60_000) {
						t.Errorf("the previous owner's record changed: %q", got)
					}

					// A takeover gets a fence above the lapsed owner's 3.
					wantOutcome(t, mustAcquire(t, s, req("lapsed", fp)), idemstore.OutcomeRecovered, 4)
					if r := b.snapshot(t, cur("lapsed")); r.state != stateInProgress || r.owner != "new-owner" || r.fence != 4 {
						t.Errorf("after the takeover, the current key holds %+v; want the new owner's lease, fence 4", r)
					}
					if mode.rollout {
						if r := b.snapshot(t, prev("lapsed")); r.owner != "new-owner" || r.fence != 4 {
							t.Errorf("after the takeover in the rollout, the previous key holds %+v; want the new owner's lease, fence 4", r)
						}
					} else {
						exists(prev("lapsed"), false)
					}

					wantOutcome(t, mustAcquire(t, s, req("new", fp)), idemstore.OutcomeFirstRun, 1)
					exists(prev("new"), mode.rollout)
					// Without a previous key, a record there is not read.
					set(prev("ignored"), completedRecord(storedFingerprint(fp), rec, 0, false), time.Hour)
					r := req("ignored", fp)
					r.PreviousKey = ""
					wantOutcome(t, mustAcquire(t, s, r), idemstore.OutcomeFirstRun, 1)
				})
			})
		}
	}
}

// TestRolloutPairsBothKeys: during the rollout, the owner of a record
// created under both keys completes both, each as its version reads it
// (the previous key with the previous fingerprint and a result without the
// body's length), extends both and releases both; a record under either
// key is found by the other version's acquire.
func TestRolloutPairsBothKeys(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		s := b.store()
		s.layoutSince.Store(time.Now().Add(-time.Minute).UnixMilli())
		const fpNew, fpOld = "fp-with-api", "fp-before"
		prev := func(k string) string { return idemstore.PreviousRecordKey("shop", "CreateOrder", "", k) }
		cur := func(k string) string { return idemstore.RecordKeyIn("shop", "CreateOrder", "", k) }
		req := func(k, token string) idemstore.AcquireRequest {
			return idemstore.AcquireRequest{Key: cur(k), PreviousKey: prev(k), Token: token, Fingerprint: fpNew, PreviousFingerprint: fpOld, Lease: time.Minute}
		}
		wantOutcome(t, mustAcquire(t, s, req("k", "owner")), idemstore.OutcomeFirstRun, 1)
		if r := b.snapshot(t, prev("k")); r.owner != "owner" || r.fingerprint != storedFingerprint(fpOld) {
			t.Errorf("previous key: %+v; want the owner's lease with the previous fingerprint", r)
		}
		if r := b.snapshot(t, cur("k")); r.owner != "owner" || r.fingerprint != storedFingerprint(fpNew) {
			t.Errorf("current key: %+v; want the owner's lease with the fingerprint", r)
		}
		// The previous version sees the lease (a conflict) under its key.
		old := idemstore.AcquireRequest{Key: prev("k"), Token: "old", Fingerprint: fpOld, Lease: time.Minute}
		if acq := mustAcquire(t, s, old); acq.Outcome != idemstore.OutcomeConflict {
			t.Errorf("previous version's acquire: %+v; want conflict", acq)
		}
		if err := s.Extend(ctx, cur("k"), "owner", 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if b.pttl(t, prev("k")) <= 2*time.Minute {
			t.Errorf("previous key not extended: PTTL %v", b.pttl(t, prev("k")))
		}
		rec := &idemstore.Record{Status: 201, Header: http.Header{}, Body: []byte(`{"id":1}`)}
		mustComplete(t, s, cur("k"), "owner", rec)
		for _, k := range []string{cur("k"), prev("k")} {
			if r := b.snapshot(t, k); r.state != stateCompleted || !reflect.DeepEqual(r.result, rec) {
				t.Errorf("%s after completion: %+v", k, r)
			}
		}
		if v := b.raw(t, prev("k")); v != completedRecord(storedFingerprint(fpOld), rec, 0, false) {
			t.Errorf("previous key holds %q; want the record its version writes", v)
		}
		// Replayed to both versions.
		if acq := mustAcquire(t, s, old); acq.Outcome != idemstore.OutcomeReplay {
			t.Errorf("previous version's retry: %+v; want replay", acq)
		}
		if acq := mustAcquire(t, s, req("k", "retry")); acq.Outcome != idemstore.OutcomeReplay {
			t.Errorf("retry: %+v; want replay", acq)
		}

		wantOutcome(t, mustAcquire(t, s, req("r", "owner2")), idemstore.OutcomeFirstRun, 1)
		if err := s.Release(ctx, cur("r"), "owner2"); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{cur("r"), prev("r")} {
			if n, _ := b.rdb.Exists(ctx, b.key(k)).Result(); n != 0 {
				t.Errorf("%s not released", k)
			}
		}
		if _, ok := s.pair("owner"); ok {
			t.Error("completed lease still paired")
		}
		if _, ok := s.pair("owner2"); ok {
			t.Error("released lease still paired")
		}
	})
}

// TestPreviousFingerprint: a record holding the request's previous
// fingerprint (written before fingerprints covered the API identity) is
// the request's: replayed when completed, taken over when lapsed; any
// other fingerprint is refused.
func TestPreviousFingerprint(t *testing.T) {
	for _, scriptOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipelined", true: "script-only"}[scriptOnly], func(t *testing.T) {
			eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
				b.scriptOnly = scriptOnly
				ctx := context.Background()
				s := b.store()
				rec := &idemstore.Record{Status: 201, Header: http.Header{}, Body: []byte(`{"id":1}`)}
				if err := b.rdb.Set(ctx, b.key("done"), completedRecord(storedFingerprint("old"), rec, 0, false), time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
				if err := b.rdb.Set(ctx, b.key("lapsed"), inProgressRecord(storedFingerprint("old"), "gone", 2, 60_000), 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				req := func(k, prevFP string) idemstore.AcquireRequest {
					return idemstore.AcquireRequest{Key: k, Token: "t", Fingerprint: "new", PreviousFingerprint: prevFP, Lease: time.Minute}
				}
				if acq := mustAcquire(t, s, req("done", "old")); acq.Outcome != idemstore.OutcomeReplay || !reflect.DeepEqual(acq.Record, rec) {
					t.Errorf("record with the previous fingerprint: %+v; want its replay", acq)
				}
				wantOutcome(t, mustAcquire(t, s, req("done", "")), idemstore.OutcomeMismatch, 0)
				wantOutcome(t, mustAcquire(t, s, req("done", "other")), idemstore.OutcomeMismatch, 0)
				wantOutcome(t, mustAcquire(t, s, req("lapsed", "old")), idemstore.OutcomeRecovered, 3)
				if r := b.snapshot(t, "lapsed"); r.fingerprint != storedFingerprint("new") {
					t.Errorf("taken over with fingerprint %q; want the request's", r.fingerprint)
				}
			})
		})
	}
}

// TestKeyLayoutMarker: the first check of a server writes its time as the
// marker, even on an empty server (processes of the previous version may
// still write records there); 0 ends the lookups; a marker that is
// neither 0 nor a time up to now is a misconfiguration that Check and
// Acquire report, naming the key and the value.
func TestKeyLayoutMarker(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		marker := b.key(KeyLayoutMarker)
		s := b.store()
		since, known := s.KeyLayoutSince()
		if !known || since.IsZero() {
			t.Errorf("KeyLayoutSince = %v, %v; want the server's time", since, known)
		}
		if v, err := b.rdb.Get(ctx, marker).Result(); err != nil || v != strconv.FormatInt(since.UnixMilli(), 10) {
			t.Errorf("marker %q, %v; want %d", v, err, since.UnixMilli())
		}
		if err := b.rdb.Set(ctx, marker, "0", 0).Err(); err != nil {
			t.Fatal(err)
		}
		s = b.store()
		if since, known := s.KeyLayoutSince(); !known || !since.IsZero() {
			t.Errorf("marker 0: KeyLayoutSince = %v, %v; want zero, known", since, known)
		}
		rec := &idemstore.Record{Status: 201, Body: []byte(`{}`)}
		prev := idemstore.PreviousRecordKey("", "Op", "", "k")
		if err := b.rdb.Set(ctx, b.key(prev), completedRecord(storedFingerprint("fp"), rec, 0, false), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		acq := mustAcquire(t, s, idemstore.AcquireRequest{Key: idemstore.RecordKey("Op", "", "k"), PreviousKey: prev, Token: "t", Fingerprint: "fp"})
		wantOutcome(t, acq, idemstore.OutcomeFirstRun, 1)

		for _, bad := range []string{"-1", "1e30", "1.5", "garbage", "", "0x10", "+5", "99999999999999999999", strconv.FormatInt(time.Now().Add(48*time.Hour).UnixMilli(), 10)} {
			if err := b.rdb.Set(ctx, marker, bad, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if b.mini == nil && bad != "" && bad[0] != '-' && len(bad) == 13 {
				continue // a time 48 h ahead: miniredis's clock is in 2023, real Redis's now
			}
			s := New(b.rdb, WithPrefix(b.prefix), WithLogger(nil))
			err := s.Check(ctx)
			if !errors.Is(err, idemstore.ErrStoreMisconfigured) || !strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), strconv.Quote(bad)) {
				t.Errorf("marker %q: Check = %v; want a misconfiguration naming %s and the value", bad, err, marker)
			}
			if _, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t", Fingerprint: "fp"}); !errors.Is(err, idemstore.ErrStoreMisconfigured) {
				t.Errorf("marker %q: Acquire = %v; want a misconfiguration", bad, err)
			}
			if _, known := s.KeyLayoutSince(); known {
				t.Errorf("marker %q: KeyLayoutSince known", bad)
			}
		}
	})
}

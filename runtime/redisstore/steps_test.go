package redisstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"

	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// stepAcquire acquires key on s for a test of the journal.
func stepAcquire(t *testing.T, s *Store, key, token, fp string) int64 {
	t.Helper()
	acq, err := s.Acquire(context.Background(), idemstore.AcquireRequest{Key: key, Token: token, Fingerprint: fp, Lease: time.Minute})
	if err != nil || (acq.Outcome != idemstore.OutcomeFirstRun && acq.Outcome != idemstore.OutcomeRecovered) {
		t.Fatalf("acquire: %+v, %v", acq, err)
	}
	return acq.Fence
}

// commitStep journals one step on s.
func commitStep(s *Store, key, token string, fence int64, name, result string) error {
	ctx := context.Background()
	tx, err := s.BeginStep(ctx, key, token, fence)
	if err != nil {
		return err
	}
	return tx.Commit(ctx, name, []byte(result), time.Hour)
}

// TestRedisStepJournal: the owner's steps are journaled and read back;
// another token can neither read nor write them; a record released and
// created again with the same fingerprint finds them, one with another
// fingerprint does not.
func TestRedisStepJournal(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		s := b.store()
		key := "steps:" + t.Name()
		fp := "f0000000000000000000000000000000000000000000000000000000000000001"
		fence := stepAcquire(t, s, key, "t1", fp)
		if got, err := s.LoadSteps(ctx, key, "t1"); err != nil || len(got) != 0 {
			t.Fatalf("empty journal: %v, %v", got, err)
		}
		for i, name := range []string{"reserve", "charge"} {
			if err := commitStep(s, key, "t1", fence, name, fmt.Sprint(i)); err != nil {
				t.Fatalf("commit %s: %v", name, err)
			}
		}
		want := map[string][]byte{"reserve": []byte("0"), "charge": []byte("1")}
		if got, err := s.LoadSteps(ctx, key, "t1"); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("journal: %q, %v; want %q", got, err, want)
		}
		if _, err := s.LoadSteps(ctx, key, "other"); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("load by another token: %v, want ErrNotOwner", err)
		}
		if err := commitStep(s, key, "other", fence, "x", "1"); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("commit by another token: %v, want ErrNotOwner", err)
		}
		if err := commitStep(s, key, "t1", fence+1, "x", "1"); !errors.Is(err, idemstore.ErrNotOwner) {
			t.Errorf("commit with another fence: %v, want ErrNotOwner", err)
		}

		if err := s.Release(ctx, key, "t1"); err != nil {
			t.Fatal(err)
		}
		stepAcquire(t, s, key, "t2", fp)
		if got, err := s.LoadSteps(ctx, key, "t2"); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("journal after a release, same fingerprint: %q, %v; want %q", got, err, want)
		}
		if err := s.Release(ctx, key, "t2"); err != nil {
			t.Fatal(err)
		}
		f3 := stepAcquire(t, s, key, "t3", "f0000000000000000000000000000000000000000000000000000000000000002")
		if got, err := s.LoadSteps(ctx, key, "t3"); err != nil || len(got) != 0 {
			t.Errorf("journal after a release, another fingerprint: %q, %v; want none", got, err)
		}
		if err := commitStep(s, key, "t3", f3, "other", "x"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.LoadSteps(ctx, key, "t3"); err != nil || !reflect.DeepEqual(got, map[string][]byte{"other": []byte("x")}) {
			t.Errorf("journal of the new fingerprint: %q, %v", got, err)
		}
	})
}

// TestRedisStepJournalExpiresWithTheRecord: the journal lives at least the
// retention given and at least as long as the record.
func TestRedisStepJournalExpiresWithTheRecord(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	s := New(rdb, WithPrefix(prefix))
	key := "steps:ttl"
	fence := stepAcquire(t, s, key, "t1", "f1")
	if err := commitStep(s, key, "t1", fence, "a", "1"); err != nil {
		t.Fatal(err)
	}
	skey := s.storageKey(key)
	// The journal's first: both count down, so the record's, read later,
	// is no more than it was when the journal's was read.
	jttl := rdb.PTTL(ctx, journalKey(prefix, key, skey)).Val()
	rec := rdb.PTTL(ctx, skey).Val()
	if jttl < rec || jttl < 59*time.Minute {
		t.Errorf("journal TTL %v, record TTL %v: want at least both the record's and the hour given", jttl, rec)
	}
}

// TestRedisStepJournalOnCluster: the journal's scripts touch two keys of
// one slot, on a real 3-master Cluster, whatever braces the key holds.
func TestRedisStepJournalOnCluster(t *testing.T) {
	ctx := context.Background()
	cc, prefix := redistest.Cluster(t)
	s := New(cc, WithPrefix(prefix))
	for _, key := range []string{"plain", "{tagged}rest", "un{closed", "a}b{", "{}empty", "x{y}z{w}"} {
		t.Run(key, func(t *testing.T) {
			token := "t-" + key
			fence := stepAcquire(t, s, key, token, "f1")
			if err := commitStep(s, key, token, fence, "a", "1"); err != nil {
				t.Fatalf("commit: %v", err)
			}
			got, err := s.LoadSteps(ctx, key, token)
			if err != nil || string(got["a"]) != "1" {
				t.Fatalf("load: %q, %v", got, err)
			}
			skey := s.storageKey(key)
			want := cc.ClusterKeySlot(ctx, skey).Val()
			if j := cc.ClusterKeySlot(ctx, journalKey(prefix, key, skey)).Val(); j != want {
				t.Errorf("journal slot %d, record slot %d", j, want)
			}
		})
	}
}

// TestJournalKeySlot: the journal key lies in the record's slot as
// Redis computes it (slot agrees with CLUSTER KEYSLOT above), for prefixes
// with and without braces.
func TestJournalKeySlot(t *testing.T) {
	for _, prefix := range []string{"", "idem", "i{d}em", "i{dem", "i}dem"} {
		for _, key := range []string{"k", "{t}k", "a{b", "a}b{c}", "{}"} {
			skey := key
			if prefix != "" {
				skey = prefix + ":" + key
			}
			if j := journalKey(prefix, key, skey); slot(j) != slot(skey) {
				t.Errorf("prefix %q key %q: journal %q in slot %d, record in %d", prefix, key, j, slot(j), slot(skey))
			}
		}
	}
	if got := crc16("123456789"); got != 0x31c3 {
		t.Errorf("crc16 check value %#x, want 0x31c3", got)
	}
}

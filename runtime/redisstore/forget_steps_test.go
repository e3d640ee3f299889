package redisstore

import (
	"context"
	"errors"
	"testing"
)

// TestForgetDeletesTheStepJournal: the journal of a key whose run failed
// outlives the released record; Forget deletes it (the operator's way out
// of an idem.StepTypeError), after which the same request finds no
// journal. A refused Forget of an in-progress record keeps the journal.
func TestForgetDeletesTheStepJournal(t *testing.T) {
	eachRedisBackend(t, func(t *testing.T, b *redisBackend) {
		ctx := context.Background()
		s := b.store()
		key := "steps:" + t.Name()
		fp := "f0000000000000000000000000000000000000000000000000000000000000001"
		fence := stepAcquire(t, s, key, "t1", fp)
		if err := commitStep(s, key, "t1", fence, "charge", `{"charge":"ch_1"}`); err != nil {
			t.Fatal(err)
		}
		if err := s.Forget(ctx, key, false); !errors.Is(err, ErrInProgress) {
			t.Fatalf("Forget in progress: %v, want ErrInProgress", err)
		}
		if got, err := s.LoadSteps(ctx, key, "t1"); err != nil || len(got) != 1 {
			t.Fatalf("journal after a refused Forget: %q, %v", got, err)
		}
		if err := s.Release(ctx, key, "t1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Forget(ctx, key, false); err != nil {
			t.Fatalf("Forget of a released key with a journal: %v", err)
		}
		if err := s.Forget(ctx, key, false); !errors.Is(err, ErrNoRecord) {
			t.Errorf("Forget again: %v, want ErrNoRecord", err)
		}
		stepAcquire(t, s, key, "t2", fp)
		if got, err := s.LoadSteps(ctx, key, "t2"); err != nil || len(got) != 0 {
			t.Errorf("journal of the same request after Forget: %q, %v; want none", got, err)
		}
		if err := commitStep(s, key, "t2", 1, "charge", `7`); err != nil {
			t.Fatal(err)
		}
		if err := s.Forget(ctx, key, true); err != nil {
			t.Fatalf("forced Forget: %v", err)
		}
		if n, err := b.rdb.Exists(ctx, b.key(key), journalKey(b.prefix, key, b.key(key))).Result(); err != nil || n != 0 {
			t.Errorf("forced Forget left %d of the record and its journal (%v)", n, err)
		}
	})
}

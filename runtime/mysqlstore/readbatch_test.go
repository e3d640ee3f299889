package mysqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestReadBatchReplies reads every kind of record in one batch, as a read
// lane does with reads that queued while it was busy: one statement, one
// round trip, and each read gets the answer of its own key and
// fingerprint, a key asked twice included.
func TestReadBatchReplies(t *testing.T) {
	var n atomic.Int64
	db := countingDB(t, mysqltest.DSN(t), 1, &n)
	s, table := mysqltest.Store(t, db)
	for i := range 10 {
		sqlfamilytest.Complete(t, s, fmt.Sprintf("done-%d", i), fmt.Sprintf("body-%d", i))
	}
	sqlfamilytest.Acquire(t, s, "held", "tok-held", "fp") // in progress, a minute's lease
	sqlfamilytest.Acquire(t, s, "lapsed", "tok-lapsed", "fp")
	sqlfamilytest.Lapse(t, dialect{}, mysqlDB{db}, table, "lapsed", false)
	sqlfamilytest.Complete(t, s, "expired", "gone")
	sqlfamilytest.Lapse(t, dialect{}, mysqlDB{db}, table, "expired", true) // its row still there: no purge

	type want struct {
		outcome idemstore.Outcome
		body    string
		claim   bool
	}
	var keys, fps []string
	var wants []want
	add := func(key, fp string, w want) {
		keys, fps, wants = append(keys, key), append(fps, fp), append(wants, w)
	}
	for _, i := range rand.Perm(10) {
		add(fmt.Sprintf("done-%d", i), "fp", want{outcome: idemstore.OutcomeReplay, body: fmt.Sprintf("body-%d", i)})
	}
	add("done-3", "another payload", want{outcome: idemstore.OutcomeMismatch})
	add("held", "fp", want{outcome: idemstore.OutcomeConflict})
	add("lapsed", "fp", want{outcome: idemstore.OutcomeRecovered, claim: true})
	add("absent", "fp", want{claim: true})
	add("expired", "another payload", want{claim: true})
	add("done-7", "fp", want{outcome: idemstore.OutcomeReplay, body: "body-7"}) // 16 reads: a statement of 16 keys

	s.ReadBatch(context.Background(), keys, fps) // its statement prepared
	rt := n.Load()
	replies := s.ReadBatch(context.Background(), keys, fps)
	if rt := n.Load() - rt; rt != 1 {
		t.Errorf("a batch of %d reads took %d round trips, want 1", len(keys), rt)
	}
	bodies := map[*byte]string{}
	for i, r := range replies {
		w := wants[i]
		if r.Err != nil {
			t.Errorf("read %d (%s, %s): %v", i, keys[i], fps[i], r.Err)
			continue
		}
		if r.Claim != w.claim || (!w.claim || w.outcome != 0) && r.Acq.Outcome != w.outcome {
			t.Errorf("read %d (%s, %s) = %+v claim %v, want outcome %v claim %v", i, keys[i], fps[i], r.Acq, r.Claim, w.outcome, w.claim)
			continue
		}
		if w.outcome != idemstore.OutcomeReplay {
			continue
		}
		if got := string(r.Acq.Record.Body); got != w.body || r.Acq.Record.Header.Get("X-Key") != keys[i] {
			t.Errorf("read %d (%s) replayed %q with X-Key %q, want %q with %q", i, keys[i], got, r.Acq.Record.Header.Get("X-Key"), w.body, keys[i])
		}
		if other, shared := bodies[&r.Acq.Record.Body[0]]; shared {
			t.Errorf("read %d (%s) shares its body's bytes with %s's", i, keys[i], other)
		}
		bodies[&r.Acq.Record.Body[0]] = keys[i]
	}
}

// TestReadBatchServerError: a statement the server refuses fails every
// read of the batch, each with the store's error, and none waits.
func TestReadBatchServerError(t *testing.T) {
	db := mysqltest.DB(t, 2)
	s, table := mysqltest.Store(t, db)
	mysqltest.Drop(t, db, table)
	for i, r := range s.ReadBatch(context.Background(), []string{"a", "b", "c"}, []string{"fp", "fp", "fp"}) {
		if !errors.Is(r.Err, idemstore.ErrStoreUnavailable) {
			t.Errorf("read %d of a missing table: %v, want a store error", i, r.Err)
		}
	}
}

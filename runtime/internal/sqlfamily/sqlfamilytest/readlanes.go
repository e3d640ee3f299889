package sqlfamilytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Complete stores body for key (fingerprint "fp") through Acquire and
// Complete, with a header X-Key of the key.
func Complete(t testing.TB, s idemstore.Store, key, body string) {
	t.Helper()
	if a := Acquire(t, s, key, "tok-"+key, "fp"); a.Outcome != idemstore.OutcomeFirstRun {
		t.Fatalf("acquire %s = %+v, want a first run", key, a)
	}
	rec := &idemstore.Record{Status: 201, Header: map[string][]string{"X-Key": {key}}, Body: []byte(body)}
	if err := s.Complete(context.Background(), key, "tok-"+key, rec, time.Hour); err != nil {
		t.Fatalf("complete %s: %v", key, err)
	}
}

// testReadLanesUnderLoad replays many keys from many goroutines through
// one read lane: every acquire gets its own key's answer, and the reads
// that queue while the lane is busy share round trips.
func testReadLanesUnderLoad(t *testing.T, d Dialect) {
	db, roundTrips := d.OpenCounting(t, d.DSN(t), 8)
	s, _ := db.Store(t, StoreConfig{ReadLanes: 1})
	const keys, callers, each = 100, 32, 50
	for i := range keys {
		Complete(t, s, fmt.Sprintf("k%d", i), fmt.Sprintf("body of k%d", i))
	}
	before := roundTrips()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for range each {
				key := fmt.Sprintf("k%d", rand.IntN(keys))
				acq, tx, err := s.AcquireRun(context.Background(), idemstore.AcquireRequest{Key: key, Fingerprint: "fp", Token: "t-" + key, Lease: time.Minute})
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: %w", key, err)
					return
				case tx != nil || acq.Outcome != idemstore.OutcomeReplay:
					errs <- fmt.Errorf("%s: %+v, want a replay", key, acq)
					return
				case string(acq.Record.Body) != "body of "+key || acq.Record.Header.Get("X-Key") != key:
					errs <- fmt.Errorf("%s replayed %q (X-Key %q): another key's answer", key, acq.Record.Body, acq.Record.Header.Get("X-Key"))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	reads, rt := int64(callers*each), roundTrips()-before
	if rt >= reads {
		t.Errorf("%d reads took %d round trips through one lane: none shared one", reads, rt)
	}
	t.Logf("%d reads in %d round trips (%.1f a round trip)", reads, rt, float64(reads)/float64(rt))
}

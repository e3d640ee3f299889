package sqlfamilytest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/lanes"
)

// Read is one reply of a batch of reads ([Dialect.ReadBatch]).
type Read struct {
	// Acq is the read's answer, when it answers the acquire (a replay, a
	// mismatch, a conflict), or what the claim that follows it starts from.
	Acq idemstore.Acquisition
	// Claim: the read does not answer the acquire, which goes on to claim
	// the key (no record, an expired one, or a lease that lapsed).
	Claim bool
	// Lapsed: the key's record is another run's, whose lease lapsed: the
	// claim takes it over.
	Lapsed bool
	Err    error
}

// SendReads sends reqs through l as one batch, as a lane does with the
// reads that queued while it was busy, and returns their replies in order:
// q is a store's read of a request, read the suite's view of its reply. A
// store's ReadBatch hook is SendReads on its read lanes.
func SendReads[Q, R any](ctx context.Context, l *lanes.Lanes[Q, R], reqs []idemstore.AcquireRequest, q func(idemstore.AcquireRequest) Q, read func(R, error) Read) []Read {
	calls := make([]*lanes.Call[Q, R], len(reqs))
	for i, req := range reqs {
		calls[i] = lanes.NewCall[Q, R](ctx, q(req))
	}
	l.Send(calls)
	replies := make([]Read, len(reqs))
	for i, c := range calls {
		c.Wait()
		replies[i] = read(c.Reply, c.Err)
	}
	return replies
}

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

// testReadBatchReplies sends the reads of every kind of record in one
// batch, as a read lane does with reads that queued while it was busy: one
// statement's round trip, and each read gets the answer of its own key and
// fingerprint, a key asked twice included, each replay with bytes of its
// own.
func testReadBatchReplies(t *testing.T, d Dialect) {
	// One connection: the batch's statements, prepared by the first
	// batch, are the connection's.
	db, roundTrips := d.OpenCounting(t, d.DSN(t), 1)
	s, table := db.Store(t, StoreConfig{})
	for i := range 10 {
		Complete(t, s, fmt.Sprintf("done-%d", i), fmt.Sprintf("body-%d", i))
	}
	Acquire(t, s, "held", "tok-held", "fp") // in progress, a minute's lease
	Acquire(t, s, "lapsed", "tok-lapsed", "fp")
	Lapse(t, d, db, table, "lapsed", false)
	Complete(t, s, "expired", "gone")
	Lapse(t, d, db, table, "expired", true) // its row still there: no purge

	type want struct {
		outcome       idemstore.Outcome
		body          string
		claim, lapsed bool
	}
	var reqs []idemstore.AcquireRequest
	var wants []want
	add := func(key, fp string, w want) {
		reqs = append(reqs, idemstore.AcquireRequest{Key: key, Fingerprint: fp, Token: "reader"})
		wants = append(wants, w)
	}
	for _, i := range rand.Perm(10) {
		add(fmt.Sprintf("done-%d", i), "fp", want{outcome: idemstore.OutcomeReplay, body: fmt.Sprintf("body-%d", i)})
	}
	add("done-3", "another payload", want{outcome: idemstore.OutcomeMismatch})
	add("held", "fp", want{outcome: idemstore.OutcomeConflict})
	add("lapsed", "fp", want{claim: true, lapsed: true})
	add("absent", "fp", want{claim: true})
	add("expired", "another payload", want{claim: true})
	add("done-7", "fp", want{outcome: idemstore.OutcomeReplay, body: "body-7"}) // 16 reads

	ctx := context.Background()
	d.ReadBatch(ctx, s, reqs) // its statements prepared
	before := roundTrips()
	replies := d.ReadBatch(ctx, s, reqs)
	if rt := roundTrips() - before; rt != 1 {
		t.Errorf("a batch of %d reads took %d round trips, want 1", len(reqs), rt)
	}
	bodies := map[*byte]string{}
	for i, r := range replies {
		w, req := wants[i], reqs[i]
		if r.Err != nil {
			t.Errorf("read %d (%s, %s): %v", i, req.Key, req.Fingerprint, r.Err)
			continue
		}
		if r.Claim != w.claim || r.Lapsed != w.lapsed || (!w.claim && r.Acq.Outcome != w.outcome) {
			t.Errorf("read %d (%s, %s) = %+v claim %v lapsed %v, want outcome %v claim %v lapsed %v",
				i, req.Key, req.Fingerprint, r.Acq, r.Claim, r.Lapsed, w.outcome, w.claim, w.lapsed)
			continue
		}
		if req.Key == "held" && (r.Acq.Remaining <= 50*time.Second || r.Acq.Remaining > time.Minute) {
			t.Errorf("the held key's conflict has %v left, want about a minute", r.Acq.Remaining)
		}
		if w.outcome != idemstore.OutcomeReplay {
			continue
		}
		if got := string(r.Acq.Record.Body); got != w.body || r.Acq.Record.Header.Get("X-Key") != req.Key {
			t.Errorf("read %d (%s) replayed %q with X-Key %q, want %q with %q", i, req.Key, got, r.Acq.Record.Header.Get("X-Key"), w.body, req.Key)
		}
		if other, shared := bodies[&r.Acq.Record.Body[0]]; shared {
			t.Errorf("read %d (%s) shares its body's bytes with %s's", i, req.Key, other)
		}
		bodies[&r.Acq.Record.Body[0]] = req.Key
	}
}

// testReadBatchServerError: a statement the server refuses fails every
// read of the batch, each with the store's error, and none waits.
func testReadBatchServerError(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 2)
	s, table := db.Store(t, StoreConfig{})
	db.Exec(t, "DROP TABLE "+d.Quote(table))
	reqs := []idemstore.AcquireRequest{{Key: "a", Fingerprint: "fp"}, {Key: "b", Fingerprint: "fp"}, {Key: "c", Fingerprint: "fp"}}
	for i, r := range d.ReadBatch(context.Background(), s, reqs) {
		if !d.IsMissingTable(r.Err) {
			t.Errorf("read %d of a missing table: %v, want the store's error of a table that does not exist", i, r.Err)
		}
	}
}

// testReadLanesContextEnds: a read waiting behind another, in flight on
// the one lane and the pool's one connection, returns its context's error
// when the context ends, and the lane goes on with the others. The waiting
// read is of the same key (a store may share the read in flight, and one
// that shares a read ended by its reader's context reads again) or of
// another key (it waits on the lane itself).
func testReadLanesContextEnds(t *testing.T, d Dialect) {
	for _, other := range []string{"k", "k2"} {
		t.Run("waiting-for-"+other, func(t *testing.T) {
			db, proxy := ProxiedDB(t, d, 1, nil)
			s, _ := db.Store(t, StoreConfig{ReadLanes: 1})
			Complete(t, s, "k", "the answer")
			Complete(t, s, "k2", "the answer")
			replay := func(ctx context.Context, key string) (idemstore.Acquisition, error) {
				acq, _, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: key, Fingerprint: "fp", Token: "t", Lease: time.Minute})
				return acq, err
			}
			if _, err := replay(context.Background(), "k"); err != nil { // verified, warm
				t.Fatal(err)
			}

			held, release := proxy.Stall(t) // the first read's statement waits in the proxy
			first := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				acq, err := replay(ctx, "k")
				if err == nil && string(acq.Record.Body) != "the answer" {
					err = fmt.Errorf("replayed %q", acq.Record.Body)
				}
				first <- err
			}()
			<-held
			second := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_, err := replay(ctx, other)
				second <- err
			}()
			select {
			case err := <-second:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("a read whose context ended while it waited behind another: %v, want its context's deadline", err)
				}
			case <-time.After(10 * time.Second): // a bound on the failure, not a wait for success
				t.Errorf("a read whose context ended while it waited behind another is still waiting 10 s on")
			}
			release()
			if err := <-first; err != nil {
				t.Errorf("the read in flight, once its statement went on: %v", err)
			}
			if acq, err := replay(context.Background(), other); err != nil || string(acq.Record.Body) != "the answer" {
				t.Errorf("a replay afterwards: %+v, %v", acq, err)
			}
		})
	}
}

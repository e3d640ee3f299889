package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// TestReadBatchReplies sends the reads of every kind of record in one
// batch, as a read lane does with reads that queued while it was busy: one
// round trip, and each read gets the reply of its own key and fingerprint.
func TestReadBatchReplies(t *testing.T) {
	pool, counter := pgtest.CountingPool(t, 2)
	s, table := pgtest.Store(t, pool)
	for i := range 10 {
		sqlfamilytest.Complete(t, s, fmt.Sprintf("done-%d", i), fmt.Sprintf("body-%d", i))
	}
	sqlfamilytest.Acquire(t, s, "held", "tok-held", "fp") // in progress, a minute's lease
	sqlfamilytest.Acquire(t, s, "lapsed", "tok-lapsed", "fp")
	sqlfamilytest.Lapse(t, dialect{}, pgPool{pool}, table, "lapsed", false)

	type want struct {
		outcome       idemstore.Outcome
		body          string
		found, lapsed bool
	}
	var reqs []idemstore.AcquireRequest
	var wants []want
	add := func(key, fp string, w want) {
		reqs = append(reqs, idemstore.AcquireRequest{Key: key, Fingerprint: fp, Token: "reader"})
		wants = append(wants, w)
	}
	for _, i := range rand.Perm(10) {
		add(fmt.Sprintf("done-%d", i), "fp", want{outcome: idemstore.OutcomeReplay, body: fmt.Sprintf("body-%d", i), found: true})
	}
	add("done-3", "another payload", want{outcome: idemstore.OutcomeMismatch, found: true})
	add("held", "fp", want{outcome: idemstore.OutcomeConflict, found: true})
	add("lapsed", "fp", want{outcome: idemstore.OutcomeConflict, found: true, lapsed: true})
	add("absent", "fp", want{})
	add("done-7", "fp", want{outcome: idemstore.OutcomeReplay, body: "body-7", found: true})

	counter.Reset()
	replies := s.ReadBatch(context.Background(), reqs)
	if rt := counter.RoundTrips(); rt != 1 {
		t.Errorf("a batch of %d reads took %d round trips, want 1:\n%s", len(reqs), rt, strings.Join(counter.Statements(), "\n"))
	}
	for i, r := range replies {
		w, req := wants[i], reqs[i]
		if r.Err != nil {
			t.Errorf("read %d (%s, %s): %v", i, req.Key, req.Fingerprint, r.Err)
			continue
		}
		if r.Found != w.found || r.Lapsed != w.lapsed || (w.found && r.Acq.Outcome != w.outcome) {
			t.Errorf("read %d (%s, %s) = %+v found %v lapsed %v, want outcome %v found %v lapsed %v",
				i, req.Key, req.Fingerprint, r.Acq, r.Found, r.Lapsed, w.outcome, w.found, w.lapsed)
			continue
		}
		if w.outcome == idemstore.OutcomeReplay {
			if got := string(r.Acq.Record.Body); got != w.body || r.Acq.Record.Header.Get("X-Key") != req.Key {
				t.Errorf("read %d (%s) replayed %q with X-Key %q, want %q with %q", i, req.Key, got, r.Acq.Record.Header.Get("X-Key"), w.body, req.Key)
			}
		}
		if req.Key == "held" && (r.Acq.Remaining <= 50*time.Second || r.Acq.Remaining > time.Minute) {
			t.Errorf("the held key's conflict has %v left, want about a minute", r.Acq.Remaining)
		}
	}
}

// TestReadBatchServerError: a statement the server refuses fails every
// read of the batch, each with the server's error, and none waits.
func TestReadBatchServerError(t *testing.T) {
	pool := pgtest.Pool(t, 2)
	s, table := pgtest.Store(t, pool)
	pgtest.Drop(t, pool, table)
	reqs := []idemstore.AcquireRequest{{Key: "a", Fingerprint: "fp"}, {Key: "b", Fingerprint: "fp"}, {Key: "c", Fingerprint: "fp"}}
	for i, r := range s.ReadBatch(context.Background(), reqs) {
		var pe *pgconn.PgError
		if !errors.As(r.Err, &pe) || pe.Code != "42P01" {
			t.Errorf("read %d of a missing table: %v, want the server's undefined_table", i, r.Err)
		}
	}
}

// TestReadLanesContextEnds: a read waiting for a busy lane returns its
// context's error when the context ends, the lane goes on with the others,
// and after Close reads go on in round trips of their own. The two reads
// are of one key, so one may share the other's (readShared): a read that
// shares one ended by its reader's context reads again.
func TestReadLanesContextEnds(t *testing.T) {
	pool := pgtest.Pool(t, 1)
	s, _ := pgtest.Store(t, pool, pgstore.WithReadLanes(1))
	sqlfamilytest.Complete(t, s, "k", "the answer")
	replay := func(ctx context.Context) (idemstore.Acquisition, error) {
		acq, _, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "k", Fingerprint: "fp", Token: "t", Lease: time.Minute})
		return acq, err
	}
	if _, err := replay(context.Background()); err != nil { // verified, warm
		t.Fatal(err)
	}

	held, err := pool.Acquire(context.Background()) // the pool's one connection: the lane's round trip waits for it
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		acq, err := replay(ctx)
		if err == nil && string(acq.Record.Body) != "the answer" {
			err = fmt.Errorf("replayed %q", acq.Record.Body)
		}
		first <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := replay(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a read whose context ended while the lane waited: %v, want its context's deadline", err)
	}
	held.Release()
	if err := <-first; err != nil {
		t.Errorf("the read the lane sent once the connection was free: %v", err)
	}

	s.Close()
	if acq, err := replay(context.Background()); err != nil || string(acq.Record.Body) != "the answer" {
		t.Errorf("a replay after Close: %+v, %v", acq, err)
	}
}

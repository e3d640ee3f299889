package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

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

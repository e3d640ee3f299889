package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// TestWaitsPerCompletion: under load, one WAIT acknowledges many
// completions (the completions of a master that wait for its replicas
// share its acknowledged lane's batches, one WAIT after each batch's
// scripts): at 32 concurrent senders on a master with a replica in sync,
// fewer than one WAIT per ten completions. With a WAIT per completion (a
// lane per call) it fails.
func TestWaitsPerCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	ctx := context.Background()
	master, _ := startReplicated(t, redisproc.Options{})
	admin := client(t, master.Addr())
	s := New(client(t, master.Addr()))
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	const senders, each = 32, 100
	before := redistest.CommandCalls(t, admin)["wait"]
	var wg sync.WaitGroup
	var mu sync.Mutex
	unacked := 0
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("w-%d-%d", g, i)
				acq, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: "t", Fingerprint: "fp", Lease: time.Minute})
				if err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
					t.Errorf("acquire %s: %+v, %v", key, acq, err)
					return
				}
				err = s.Complete(ctx, key, "t", &idemstore.Record{Status: 201}, time.Hour)
				switch {
				case errors.Is(err, idemstore.ErrUnreplicated):
					mu.Lock()
					unacked++
					mu.Unlock()
				case err != nil:
					t.Errorf("complete %s: %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	waits := redistest.CommandCalls(t, admin)["wait"] - before
	t.Logf("%d completions, %d WAIT, %d unacknowledged", senders*each, waits, unacked)
	if waits*10 >= senders*each {
		t.Errorf("%d WAIT for %d completions at %d senders; want fewer than one per ten", waits, senders*each, senders)
	}
}

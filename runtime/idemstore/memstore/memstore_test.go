package memstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestConformance: the store passes every check of the suite on a fake
// clock, its runs in transactions (NewTx).
func TestConformance(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := memstore.NewTx(memstore.WithClock(clock.Now))
	idemstoretest.Run(t, idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Advance:  clock.Advance,
		TxWrite:  memstore.TxWrite,
		TxMarked: s.TxMarked,
	})
}

// TestConformanceInRealTime: it passes them on the real clock too, where
// the suite waits for short leases to lapse; and so does New, the store
// without transactions.
func TestConformanceInRealTime(t *testing.T) {
	s := memstore.NewTx()
	idemstoretest.Run(t, idemstoretest.Harness{
		New:      func() (idemstore.Store, error) { return s, nil },
		Lease:    50 * time.Millisecond,
		TxWrite:  memstore.TxWrite,
		TxMarked: s.TxMarked,
	})
	idemstoretest.Run(t, idemstoretest.Harness{
		New:   func() (idemstore.Store, error) { return memstore.New(), nil },
		Lease: 50 * time.Millisecond,
	})
}

// TestLookup: Lookup shows a key's record as it stands (owner and fence in
// progress, a copy of the answer once completed) and nothing once its
// retention has lapsed; Keys lists the keys held.
func TestLookup(t *testing.T) {
	ctx := t.Context()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := memstore.New(memstore.WithClock(clock.Now))
	if _, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: "k", Token: "t1", Fingerprint: "fp", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	e, ok := s.Lookup("k")
	if !ok || e.Completed || e.Token != "t1" || e.Fence != 1 || e.Fingerprint != "fp" || !e.Until.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("in progress: %+v, %v", e, ok)
	}
	if err := s.Complete(ctx, "k", "t1", &idemstore.Record{Status: 201, Body: []byte("made")}, time.Hour); err != nil {
		t.Fatal(err)
	}
	e, ok = s.Lookup("k")
	if !ok || !e.Completed || e.Record == nil || e.Record.Status != 201 || string(e.Record.Body) != "made" {
		t.Fatalf("completed: %+v, %v", e, ok)
	}
	e.Record.Body[0] = 'X' // a copy
	if again, _ := s.Lookup("k"); string(again.Record.Body) != "made" {
		t.Errorf("Lookup shares the record's body: %q", again.Record.Body)
	}
	if keys := s.Keys(); len(keys) != 1 || keys[0] != "k" {
		t.Errorf("Keys = %q", keys)
	}
	clock.Advance(time.Hour)
	if e, ok := s.Lookup("k"); ok {
		t.Errorf("after the retention: %+v", e)
	}
	if keys := s.Keys(); len(keys) != 0 {
		t.Errorf("Keys after the retention = %q", keys)
	}
}

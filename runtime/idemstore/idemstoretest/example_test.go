package idemstoretest_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/idemstoretest"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// countingStore is a store of one's own: it wraps another (here the
// in-memory reference store) and counts the acquires, for a metric.
type countingStore struct {
	idemstore.Store
	acquires atomic.Int64
}

// Acquire counts the acquire and passes it on.
func (s *countingStore) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, req)
}

// TestCountingStore runs the conformance suite against the wrapper.
func TestCountingStore(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the stores' clock, moved by Advance
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	idemstoretest.Run(t, idemstoretest.Harness{
		New: func() (idemstore.Store, error) {
			return &countingStore{Store: memstore.New(memstore.WithClock(clock))}, nil
		},
		Advance: func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) },
	})
}

package idem_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// extendCounter is a store that counts the extensions of each key.
type extendCounter struct {
	idemstore.Store
	mu      sync.Mutex // guards n
	n       map[string]int
	changed chan struct{} // receives after every extension, if there is room
}

func (s *extendCounter) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	err := s.Store.Extend(ctx, key, token, lease)
	if err == nil {
		s.mu.Lock()
		s.n[key]++
		s.mu.Unlock()
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	return err
}

// counts returns the extensions per key and in all.
func (s *extendCounter) counts() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	per := make(map[string]int, len(s.n))
	for k, n := range s.n {
		per[k], total = n, total+n
	}
	return per, total
}

// TestHeartbeatsShareTheEngine: leases of one engine held at once, among
// many that start and end quickly, are each extended again and again, and
// none is extended after its handler returned.
func TestHeartbeatsShareTheEngine(t *testing.T) {
	const long = 8
	store := &extendCounter{Store: newMemStore(), n: map[string]int{}, changed: make(chan struct{}, 1)}
	release := make(chan struct{})
	h := newHarnessOn(t, store, idemop.Operation{Lock: 150 * time.Millisecond}, func(h *harness, w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Idempotency-Key"), "long-") {
			<-release
		}
		createHandler(h, w, r)
	})
	var wg sync.WaitGroup
	for i := range long {
		wg.Go(func() {
			if w := h.post(fmt.Sprintf("long-%d", i), `{}`); w.Code != http.StatusCreated {
				t.Errorf("long-%d: %d %s", i, w.Code, w.Body)
			}
		})
	}
	// Short requests start and stop their heartbeats meanwhile, until
	// every long lease was extended four times (4 x lock/3 > lock: each
	// would have lapsed without).
	for i := 0; ; i++ {
		if w := h.post(fmt.Sprintf("short-%d", i), `{}`); w.Code != http.StatusCreated {
			t.Fatalf("short-%d: %d %s", i, w.Code, w.Body)
		}
		per, _ := store.counts()
		done := 0
		for j := range long {
			if per[idemstore.RecordKey("CreatePet", "", fmt.Sprintf("long-%d", j))] >= 4 {
				done++
			}
		}
		if done == long {
			break
		}
		if i%16 == 15 {
			<-store.changed // wait for the heartbeats rather than spin
		}
	}
	close(release)
	wg.Wait()
	_, before := store.counts()
	for i := range 20 {
		h.post(fmt.Sprintf("after-%d", i), `{}`)
	}
	if per, after := store.counts(); after != before {
		t.Errorf("%d extensions after every handler returned: %v", after-before, per)
	}
}

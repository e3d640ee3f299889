package e2e_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// TestBatchedDuplicates: 200 keys, each sent by 8 concurrent
// requests, all released at once, through the default wiring on real
// Redis, whose store merges concurrent calls into shared pipelines. Every
// key runs its handler exactly once (runs counted by the handler); every
// other answer is the identical replay or a 409; and the store sent fewer
// pipelines than it made calls, so the calls were batched, and fewer
// replica counts than completions.
func TestBatchedDuplicates(t *testing.T) {
	rdb := redistest.Real(t)
	counter := redistest.CountCommands(rdb)
	runs := newFaultRuns()
	store := redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t)))
	h := idem.NewEngine(store).Middleware(faultOp)(faultHandler(runs, nil))
	faultPost(h, "warm-up") // the store's first check, out of the counts
	counter.Reset()

	const keys, fanout = 200, 8
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards answers
	type answer struct {
		code     int
		replayed bool
		body     string
	}
	answers := map[string][]answer{}
	for k := range keys {
		key := fmt.Sprintf("dup-%d", k)
		for range fanout {
			wg.Go(func() {
				<-start
				w := faultPost(h, key)
				a := answer{w.Code, w.Header().Get(idemop.HeaderReplayed) == "true", w.Body.String()}
				mu.Lock()
				answers[key] = append(answers[key], a)
				mu.Unlock()
			})
		}
	}
	close(start)
	wg.Wait()

	for k := range keys {
		key := fmt.Sprintf("dup-%d", k)
		if n := runs.of(key); n != 1 {
			t.Errorf("%s ran %d times; want 1", key, n)
		}
		originals := 0
		var original string
		for _, a := range answers[key] {
			if a.code == http.StatusCreated && !a.replayed {
				originals++
				original = a.body
			}
		}
		if originals != 1 {
			t.Errorf("%s: %d original answers; want 1", key, originals)
		}
		for _, a := range answers[key] {
			switch {
			case a.code == http.StatusCreated && a.replayed && a.body != original:
				t.Errorf("%s: replay %q differs from the original %q", key, a.body, original)
			case a.code != http.StatusCreated && a.code != http.StatusConflict:
				t.Errorf("%s: answer %d %s; want 201, its replay or 409", key, a.code, a.body)
			}
		}
	}
	calls := counter.Calls()
	sent := calls["set"] + calls["evalsha"] // one per acquire, one per completion (or conflict)
	if trips := counter.RoundTrips(); trips >= sent {
		t.Errorf("%d pipelines for %d store calls (%v): the calls were not batched", trips, sent, calls)
	} else {
		t.Logf("%d pipelines for %d store calls (%v)", trips, sent, calls)
	}
	// The server has no replica the store knows of, so each completion
	// counts them: one INFO replication per batch of completions.
	if calls["info"] == 0 || calls["info"] >= keys {
		t.Errorf("%d INFO replication for %d completions: want at least one, shared by a batch's completions", calls["info"], keys)
	}
}

package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// failoverLoad drives first requests through an engine while a test fails
// its master over: senders claim keys two at a time (two senders per key, so
// that duplicates meet in the store) and send each until it is answered
// 2xx, giving it up after 250 conflicts (a lease orphaned by the failover).
// It keeps every answer, and check retries every key afterwards.
type failoverLoad struct {
	h    http.Handler
	runs *faultRuns

	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	claims atomic.Int64
	plain  atomic.Int64 // plain 2xx answers (neither replayed nor degraded)
	ok     atomic.Int64 // 2xx answers

	mu      sync.Mutex                 // guards answers
	answers map[string][]failoverReply // per key, in the order they came
}

// failoverReply is one answer of the load: its kind (firstAnswer) and, for
// a 2xx, the fence of the run that made it.
type failoverReply struct {
	kind  string
	fence int64
}

// startFailoverLoad starts senders goroutines sending POST /orders through
// h.
func startFailoverLoad(t *testing.T, h http.Handler, runs *faultRuns, senders int) *failoverLoad {
	l := &failoverLoad{h: h, runs: runs, stop: make(chan struct{}), answers: map[string][]failoverReply{}}
	for range senders {
		l.wg.Go(func() {
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for l.send(t, fmt.Sprintf("fo-%d", (l.claims.Add(1)-1)/2), tick) {
			}
		})
	}
	t.Cleanup(l.halt)
	return l
}

// send sends key until a 2xx, 250 conflicts or stop; false on stop.
func (l *failoverLoad) send(t *testing.T, key string, tick *time.Ticker) bool {
	for conflicts := 0; conflicts < 250; {
		select {
		case <-l.stop:
			return false
		default:
		}
		w := faultPost(l.h, key)
		r := failoverReply{kind: firstAnswer(w)}
		if w.Code/100 == 2 {
			r.fence = faultDecode(t, w).Fence
		}
		l.mu.Lock()
		l.answers[key] = append(l.answers[key], r)
		l.mu.Unlock()
		switch {
		case w.Code/100 == 2:
			l.ok.Add(1)
			if r.kind == "plain" {
				l.plain.Add(1)
			}
			return true
		case w.Code == http.StatusConflict:
			conflicts++
		case w.Code == http.StatusServiceUnavailable:
		default:
			t.Errorf("key %s: unexpected answer %d %s", key, w.Code, w.Body)
			return false
		}
		select {
		case <-l.stop:
			return false
		case <-tick.C:
		}
	}
	return true
}

// halt stops the senders and waits for them.
func (l *failoverLoad) halt() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// check halts the load and retries every key it sent until the retry is
// answered 2xx. A key that was answered a plain 2xx must be replayed with
// the fence of that answer, and must not run again: the failover undid no
// answered result. It returns how many keys ran more than once during the
// load, how many of those were never answered degraded (a duplicate that
// started after the failover had lost the in-progress record; see docs/redis.md),
// and how many answers of each kind the load saw.
func (l *failoverLoad) check(t *testing.T) (ranTwice, undegraded int, kinds map[string]int) {
	t.Helper()
	l.halt()
	keys := make([]string, 0, len(l.answers))
	for key := range l.answers {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	kinds = map[string]int{}
	for _, key := range keys {
		replies := l.answers[key]
		for _, r := range replies {
			kinds[r.kind]++
		}
		before := l.runs.of(key)
		if before > 1 {
			ranTwice++
			if !slices.ContainsFunc(replies, func(r failoverReply) bool { return r.kind == "degraded" }) {
				undegraded++
			}
		}
		var w *httptest.ResponseRecorder
		faultEventually(t, 15*time.Second, "a 2xx answer to the retry of "+key, func() bool {
			w = faultPost(l.h, key)
			return w.Code/100 == 2
		})
		for _, r := range replies {
			if r.kind != "plain" {
				continue
			}
			var a faultAnswer
			_ = json.Unmarshal(w.Body.Bytes(), &a)
			switch {
			case w.Header().Get(idemop.HeaderReplayed) != "true" || a.Fence != r.fence:
				t.Errorf("%s: answered a plain 2xx (fence %d), then the retry after the failover answered %d replayed=%q fence %d",
					key, r.fence, w.Code, w.Header().Get(idemop.HeaderReplayed), a.Fence)
			case l.runs.of(key) != before:
				t.Errorf("%s: answered a plain 2xx, and ran again on the retry after the failover", key)
			}
		}
	}
	return ranTwice, undegraded, kinds
}

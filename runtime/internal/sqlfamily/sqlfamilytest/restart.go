package sqlfamilytest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
)

// testRestartUnderLoad: the database (a private server) is restarted while
// clients send keys, each until it gets its 201, and while one handler has
// inserted its row but not committed. While it is down requests are
// answered 503; afterwards every key has exactly one payment row, and every
// 201 of a key carries the same row.
func testRestartUnderLoad(t *testing.T, d Dialect) {
	if testing.Short() {
		t.Skip("starts a database server")
	}
	server := d.StartServer(t)
	db := d.Open(t, server.DSN(), 20)
	s, _ := db.Store(t, StoreConfig{})
	pay := db.Payments(t)
	op := PayOp()
	op.Lock, op.Wait = time.Second, 10*time.Second
	var runs atomic.Int64
	var arm atomic.Bool                                         // the next handler to reach its answer stops there
	inflight, stopped := make(chan string), make(chan struct{}) // its key; closed once the server is down
	e := idem.NewEngine(s, idem.WithStoreTimeout(time.Second))
	failed := make(chan struct{}) // closed when the test ends, so that nothing waits on a failed one
	srv := httptest.NewServer(Serve(e, &op, PaymentHandler(d, pay, func(ctx context.Context) {
		runs.Add(1)
		if arm.CompareAndSwap(true, false) {
			info, _ := idem.FromContext(ctx)
			select {
			case inflight <- info.Key:
				<-stopped
			case <-failed:
			}
		}
	})))
	defer srv.Close()
	var stopOnce sync.Once
	defer func() { close(failed); stopOnce.Do(func() { close(stopped) }) }()

	const keys, workers = 120, 6
	var (
		done       atomic.Int64
		unavail    atomic.Int64
		third      = make(chan struct{}) // closed when a third of the keys are answered
		sawOutage  = make(chan struct{})
		outageOnce sync.Once
		mu         sync.Mutex
		answers    = map[string]map[string]bool{} // key -> distinct 201 bodies
		wg         sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < keys; i += workers {
				key := fmt.Sprintf("key-%d", i)
				for {
					select {
					case <-failed:
						return
					default:
					}
					st, body := Post(t, srv.Client(), srv.URL, key)
					if st == http.StatusCreated {
						mu.Lock()
						if answers[key] == nil {
							answers[key] = map[string]bool{}
						}
						answers[key][body] = true
						mu.Unlock()
						// Ask once more: the replay must be the same.
						if st2, body2 := Post(t, srv.Client(), srv.URL, key); st2 == http.StatusCreated && body2 != body {
							t.Errorf("%s: replay %s differs from %s", key, body2, body)
						}
						if done.Add(1) == keys/3 {
							close(third)
						}
						break
					}
					if st == http.StatusServiceUnavailable {
						unavail.Add(1)
						outageOnce.Do(func() { close(sawOutage) })
					}
					// 503 (down), 409 (a lease left by the outage, until
					// it lapses), or no answer: send the key again.
				}
			}
		})
	}
	// Restart once a third of the keys are answered.
	<-third
	arm.Store(true)
	caught := <-inflight // a run between its INSERT and its commit
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	stopOnce.Do(func() { close(stopped) })
	<-sawOutage
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	for i := range keys {
		key := fmt.Sprintf("key-%d", i)
		if n := db.Count(t, pay, KeyIs(d), key); n != 1 {
			t.Errorf("%s: %d payment rows, want 1", key, n)
		}
		if len(answers[key]) != 1 {
			t.Errorf("%s: 201 bodies %v, want one", key, answers[key])
		}
	}
	if unavail.Load() == 0 {
		t.Fatalf("no request was answered 503 while %s was down", d.Name())
	}
	if runs.Load() <= keys {
		t.Errorf("%d handler runs for %d keys: the run caught by the restart (%s) should have run again", runs.Load(), keys, caught)
	}
	t.Logf("%d keys, %d handler runs, %d answers 503; %s was caught between INSERT and commit", keys, runs.Load(), unavail.Load(), caught)
}

package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/pgtest"
	idem "github.com/idemgen/idemgen/runtime"
)

// TestClientThatLeavesGetsAReplay: the client times out (0.7 s) while the
// handler, after its INSERT, is still running; the handler answers all the
// same, and its answer commits with its INSERT, so that the client's retry
// is a replay of that one run rather than a second run.
func TestClientThatLeavesGetsAReplay(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, _ := pgtest.Store(t, pool)
	pay := payments(t, pool)
	var runs atomic.Int64
	h := paymentHandler(pay, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			<-ctx.Done() // the client has given up and closed its connection
		}
	})
	srv := httptest.NewServer(serve(idem.NewEngine(s), payOp, h))
	defer srv.Close()
	impatient := &http.Client{Timeout: 700 * time.Millisecond}
	if st, b := post(t, impatient, srv.URL, "k"); st != 0 {
		t.Fatalf("the impatient client got %d %s, want its own timeout", st, b)
	}
	waiting := *payOp
	waiting.Wait = 30 * time.Second // the retry waits while the first run commits
	retry := httptest.NewServer(serve(idem.NewEngine(s), &waiting, h))
	defer retry.Close()
	st, b := post(t, retry.Client(), retry.URL, "k")
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("the retry = %d %s after %d runs; want the replay of one run", st, b, runs.Load())
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 {
		t.Fatalf("%d payment rows, want 1", n)
	}
}

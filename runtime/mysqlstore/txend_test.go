package mysqlstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/sqlfamily/sqlfamilytest"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
)

// TestCommitOfAnEndedTransaction: RunTx.Commit of a transaction the
// handler ended writes nothing and says so, with an error that is not
// ErrNotOwner (no other run took the key) and says what to change.
func TestCommitOfAnEndedTransaction(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	ctx := context.Background()
	acq, run, err := s.AcquireRun(ctx, idemstore.AcquireRequest{Key: "k", Token: "t1", Fingerprint: "fp", Lease: time.Minute})
	if err != nil || run == nil {
		t.Fatalf("acquire run = %+v, %v", acq, err)
	}
	if _, err := mysqlstore.Tx(run.Context(ctx)).ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	err = run.Commit(ctx, &idemstore.Record{Status: http.StatusCreated, Body: []byte("done")}, time.Hour)
	if err == nil || errors.Is(err, idemstore.ErrNotOwner) {
		t.Fatalf("Commit after the handler's COMMIT = %v; want an error that is not ErrNotOwner", err)
	}
	for _, want := range []string{"ended the run's transaction", "COMMIT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Commit's error %q does not say %q", err, want)
		}
	}
	if n := mysqltest.Count(t, db, table, "true"); n != 0 {
		t.Fatalf("%d records after the refused Commit; want none", n)
	}
}

// TestHandlerThatCommitsKeepsTheKeyWhileItRuns: a handler that sends COMMIT
// (which commits its claim as an in-progress record with a lease) and then
// runs past its lock keeps the key until it returns: a duplicate on another
// instance, sent once the lease would have lapsed, is answered 409 and does
// not run. The run is then answered 500, and the key is free for its
// retry.
func TestHandlerThatCommitsKeepsTheKeyWhileItRuns(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, table := mysqltest.Store(t, db)
	other := mysqlstore.New(db, mysqlstore.WithTable(table), mysqlstore.WithPurgeInterval(-1)) // another instance's store
	defer other.Close()
	pay := mysqlDB{db}.Payments(t)
	op := sqlfamilytest.PayOp()
	op.Lock = time.Second
	committed, done := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	h := sqlfamilytest.PaymentHandler(dialect{}, pay, func(ctx context.Context) {
		if runs.Add(1) > 1 {
			return
		}
		if _, err := mysqlstore.Tx(ctx).ExecContext(ctx, "COMMIT"); err != nil {
			t.Error(err)
		}
		close(committed)
		<-done
	})
	kept := make(chan struct{}, 16) // a keep-alive ended
	hooks := idem.Hooks{StoreCall: func(ctx context.Context, ev idem.Event) (context.Context, func(idem.Event)) {
		if ev.Call != "keepalive" {
			return ctx, nil
		}
		return ctx, func(idem.Event) { kept <- struct{}{} }
	}}
	first := httptest.NewServer(sqlfamilytest.Serve(idem.NewEngine(s, idem.WithHooks(hooks)), &op, h))
	defer first.Close()
	second := httptest.NewServer(sqlfamilytest.Serve(idem.NewEngine(other), &op, h))
	defer second.Close()
	answered := make(chan int, 1)
	go func() { st, _ := sqlfamilytest.Post(t, first.Client(), first.URL, "k"); answered <- st }()
	<-committed
	start := time.Now()
	for time.Since(start) < 3*op.Lock/2 { // keep-alives come every third of the lock
		<-kept
	}
	st, body := sqlfamilytest.Post(t, second.Client(), second.URL, "k")
	close(done)
	if st != http.StatusConflict || runs.Load() != 1 {
		t.Errorf("duplicate past the lock while the first runs: %d %s, %d runs; want 409, one run", st, body, runs.Load())
	}
	if st := <-answered; st != http.StatusInternalServerError {
		t.Errorf("the run that committed its own transaction: %d; want 500 (transaction-ended)", st)
	}
	if st, body := sqlfamilytest.Post(t, second.Client(), second.URL, "k"); st != http.StatusCreated {
		t.Fatalf("retry: %d %s; want 201", st, body)
	}
}

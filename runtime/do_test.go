package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// charger is a queue consumer's charge under Do: op ChargeCard on a store
// of its own, counting its runs and checking the Info it runs with.
type charger struct {
	store *memStore
	op    *idemop.Operation
	runs  atomic.Int64
}

func newCharger() *charger {
	return &charger{store: newMemStore(), op: &idemop.Operation{ID: "ChargeCard"}}
}

// do delivers the message key with payload.
func (c *charger) do(t *testing.T, key, payload string) ([]byte, bool, error) {
	return idem.Do(context.Background(), c.store, c.op, key, []byte(payload), func(ctx context.Context) ([]byte, error) {
		info, ok := idem.FromContext(ctx)
		if !ok || info.Key != key || info.Fence != 1 || info.Operation != "ChargeCard" {
			t.Errorf("info = %+v, %v", info, ok)
		}
		c.runs.Add(1)
		return []byte("charged"), nil
	})
}

// wantRuns checks how many times the charge ran.
func (c *charger) wantRuns(t *testing.T, n int64) {
	t.Helper()
	if got := c.runs.Load(); got != n {
		t.Errorf("runs = %d, want %d", got, n)
	}
}

// TestDoFirstDelivery: the first delivery of a key runs fn, with the key
// and fence 1 in its context, and returns its result, not replayed.
func TestDoFirstDelivery(t *testing.T) {
	c := newCharger()
	res, replayed, err := c.do(t, "msg-1", `{"amount":5}`)
	if err != nil || replayed || string(res) != "charged" {
		t.Fatalf("first = %q, %v, %v", res, replayed, err)
	}
	c.wantRuns(t, 1)
}

// TestDoRedeliveryReplays: a redelivery returns the stored result,
// replayed, without running fn.
func TestDoRedeliveryReplays(t *testing.T) {
	c := newCharger()
	c.do(t, "msg-1", `{"amount":5}`)
	res, replayed, err := c.do(t, "msg-1", `{"amount":5}`)
	if err != nil || !replayed || string(res) != "charged" {
		t.Fatalf("redelivery = %q, %v, %v", res, replayed, err)
	}
	c.wantRuns(t, 1)
}

// TestDoOtherPayload: the key with another payload is ErrFingerprintMismatch,
// and fn does not run.
func TestDoOtherPayload(t *testing.T) {
	c := newCharger()
	c.do(t, "msg-1", `{"amount":5}`)
	if _, _, err := c.do(t, "msg-1", `{"amount":6}`); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("other payload: %v", err)
	}
	c.wantRuns(t, 1)
}

// TestDoInvalidKey: an empty key is ErrInvalidKey, and fn does not run.
func TestDoInvalidKey(t *testing.T) {
	c := newCharger()
	if _, _, err := c.do(t, "", ""); !errors.Is(err, idem.ErrInvalidKey) {
		t.Fatalf("empty key: %v", err)
	}
	c.wantRuns(t, 0)
}

func TestDoErrorReleases(t *testing.T) {
	store := newMemStore()
	op := &idemop.Operation{ID: "Job"}
	boom := errors.New("boom")
	if _, _, err := idem.Do(context.Background(), store, op, "k", nil, func(context.Context) ([]byte, error) { return nil, boom }); err != boom {
		t.Fatalf("err = %v, want fn's error unchanged", err)
	}
	res, replayed, err := idem.Do(context.Background(), store, op, "k", nil, func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || replayed || string(res) != "ok" {
		t.Fatalf("redelivery after failure = %q, %v, %v", res, replayed, err)
	}
}

// TestDoCancelledDuringAcquire: Do, like the HTTP adapters, gives the lease
// back and does not run fn when its context ends while the key is being
// acquired; a redelivery then runs fn once.
func TestDoCancelledDuringAcquire(t *testing.T) {
	store := newMemStore()
	op := &idemop.Operation{ID: "Job"}
	ctx, cancel := context.WithCancel(context.Background())
	store.onAcquire = func(acq idemstore.Acquisition) {
		if acq.Outcome == idemstore.OutcomeFirstRun {
			cancel() // the consumer is stopped as the record is created
		}
	}
	var runs atomic.Int64
	job := func(context.Context) ([]byte, error) { runs.Add(1); return []byte("done"), nil }
	if _, _, err := idem.Do(ctx, store, op, "k", nil, job); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if runs.Load() != 0 || store.count("release") != 1 {
		t.Fatalf("%d runs, %d releases; want 0 and 1", runs.Load(), store.count("release"))
	}
	store.onAcquire = nil
	if res, replayed, err := idem.Do(context.Background(), store, op, "k", nil, job); err != nil || replayed || string(res) != "done" {
		t.Fatalf("redelivery = %q, %v, %v", res, replayed, err)
	}
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
}

func TestDoConflict(t *testing.T) {
	store := newMemStore()
	op := &idemop.Operation{ID: "Job", Lock: time.Minute}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		idem.Do(context.Background(), store, op, "k", nil, func(context.Context) ([]byte, error) {
			close(started)
			<-release
			return nil, nil
		})
	}()
	<-started
	_, _, err := idem.Do(context.Background(), store, op, "k", nil, func(context.Context) ([]byte, error) {
		t.Error("a duplicate ran")
		return nil, nil
	})
	var ce *idem.InProgressError
	if !errors.As(err, &ce) || !errors.Is(err, idem.ErrInProgress) || ce.Remaining <= 0 || ce.Remaining > time.Minute {
		t.Fatalf("err = %v", err)
	}
	close(release)
	<-done
}

func TestDoStoreUnavailable(t *testing.T) {
	store := newMemStore()
	store.setErr(errStoreDown)
	op := &idemop.Operation{ID: "Job"}
	fn := func(context.Context) ([]byte, error) { return []byte("ran"), nil }
	if _, _, err := idem.Do(context.Background(), store, op, "k", nil, fn); !errors.Is(err, idemstore.ErrStoreUnavailable) || !errors.Is(err, errStoreDown) {
		t.Fatalf("err = %v", err)
	}
	res, replayed, err := idem.Do(context.Background(), store, op, "k", nil, fn, idem.WithFailOpen(true))
	if err != nil || replayed || string(res) != "ran" {
		t.Fatalf("fail-open = %q, %v, %v", res, replayed, err)
	}
}

func TestDoResultOmitted(t *testing.T) {
	store := newMemStore()
	op := &idemop.Operation{ID: "Job"}
	big := []byte(strings.Repeat("x", 64))
	fn := func(context.Context) ([]byte, error) { return big, nil }
	if res, _, err := idem.Do(context.Background(), store, op, "k", nil, fn, idem.WithStoredBodyLimit(8)); err != nil || len(res) != 64 {
		t.Fatalf("first = %d bytes, %v", len(res), err)
	}
	if _, replayed, err := idem.Do(context.Background(), store, op, "k", nil, fn, idem.WithStoredBodyLimit(8)); !replayed || !errors.Is(err, idem.ErrResultOmitted) {
		t.Fatalf("replay = %v, %v", replayed, err)
	}
}

// TestDoTakeover: fn outlives its lease and a redelivery takes over and
// completes; the stale call gets the stored result (replayed), not its own.
// Had the newer run still been running, it would get ErrInProgress.
func TestDoTakeover(t *testing.T) {
	store := newMemStore()
	op := &idemop.Operation{ID: "ChargeCard", Lock: time.Second}
	ctx := context.Background()
	inFirst, releaseFirst := make(chan struct{}), make(chan struct{})
	type result struct {
		res      []byte
		replayed bool
		err      error
	}
	done := make(chan result)
	go func() {
		res, replayed, err := idem.Do(ctx, store, op, "m", nil, func(context.Context) ([]byte, error) {
			close(inFirst)
			<-releaseFirst
			return []byte("stale"), nil
		}, idem.WithHeartbeat(false))
		done <- result{res, replayed, err}
	}()
	<-inFirst
	store.advance(2 * time.Second)
	inSecond, releaseSecond := make(chan struct{}), make(chan struct{})
	second := make(chan result)
	go func() {
		res, replayed, err := idem.Do(ctx, store, op, "m", nil, func(context.Context) ([]byte, error) {
			close(inSecond)
			<-releaseSecond
			return []byte("newer"), nil
		}, idem.WithHeartbeat(false))
		second <- result{res, replayed, err}
	}()
	<-inSecond
	close(releaseFirst)
	if r := <-done; !errors.Is(r.err, idem.ErrInProgress) || r.res != nil {
		t.Fatalf("stale call while the newer runs = %q, %v, %v; want ErrInProgress", r.res, r.replayed, r.err)
	}
	close(releaseSecond)
	if r := <-second; r.err != nil || r.replayed || string(r.res) != "newer" {
		t.Fatalf("newer call = %q, %v, %v", r.res, r.replayed, r.err)
	}

	// The stale call finishing after the newer one completed gets its result.
	inThird, releaseThird := make(chan struct{}), make(chan struct{})
	go func() {
		res, replayed, err := idem.Do(ctx, store, op, "m2", nil, func(context.Context) ([]byte, error) {
			close(inThird)
			<-releaseThird
			return []byte("stale"), nil
		}, idem.WithHeartbeat(false))
		done <- result{res, replayed, err}
	}()
	<-inThird
	store.advance(2 * time.Second)
	if res, replayed, err := idem.Do(ctx, store, op, "m2", nil, func(context.Context) ([]byte, error) {
		return []byte("newer"), nil
	}); err != nil || replayed || string(res) != "newer" {
		t.Fatalf("takeover = %q, %v, %v", res, replayed, err)
	}
	close(releaseThird)
	if r := <-done; r.err != nil || !r.replayed || string(r.res) != "newer" {
		t.Fatalf("stale call after the newer completed = %q, %v, %v; want the stored result replayed", r.res, r.replayed, r.err)
	}
}

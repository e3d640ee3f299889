package lanes

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func double(_ context.Context, q int) (int, error) { return 2 * q, nil }

// TestRepliesToTheirCallers: under concurrent calls through one lane, each
// caller gets the reply to its own request, and calls share batches.
func TestRepliesToTheirCallers(t *testing.T) {
	var batches, batched atomic.Int64
	l := New(1, 8, double, func(_ context.Context, calls []*Call[int, int]) {
		batches.Add(1)
		batched.Add(int64(len(calls)))
		if len(calls) < 2 || len(calls) > 8 {
			t.Errorf("a batch of %d calls, want 2 to 8", len(calls))
		}
		for _, c := range calls {
			c.Reply = 2 * c.Req
		}
	})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				q := g*1000 + i
				if r, err := l.Do(context.Background(), q); err != nil || r != 2*q {
					t.Errorf("Do(%d) = %d, %v; want %d", q, r, err, 2*q)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls in %d batches, the rest alone", batched.Load(), batches.Load())
}

// TestSend: a call whose context has ended gets its error and is not
// sent; the batch's context ends at the latest deadline of its calls, or
// never if one has none; a lone call goes alone, with its own context.
func TestSend(t *testing.T) {
	var got context.Context
	var sent []int
	l := New(1, 8, func(ctx context.Context, q int) (int, error) {
		got, sent = ctx, []int{q}
		return q, nil
	}, func(ctx context.Context, calls []*Call[int, int]) {
		got, sent = ctx, nil
		for _, c := range calls {
			sent = append(sent, c.Req)
		}
	})
	now := time.Now()
	early, cancel1 := context.WithDeadline(context.Background(), now.Add(time.Minute))
	defer cancel1()
	late, cancel2 := context.WithDeadline(context.Background(), now.Add(time.Hour))
	defer cancel2()
	gone, cancel3 := context.WithCancel(context.Background())
	cancel3()

	calls := []*Call[int, int]{NewCall[int, int](early, 1), NewCall[int, int](gone, 2), NewCall[int, int](late, 3)}
	l.Send(calls)
	for _, c := range calls {
		c.Wait()
	}
	if len(sent) != 2 || sent[0] != 1 || sent[1] != 3 {
		t.Errorf("sent %v, want [1 3]", sent)
	}
	if d, ok := got.Deadline(); !ok || !d.Equal(now.Add(time.Hour)) {
		t.Errorf("the batch's deadline %v (%v), want the latest, %v", d, ok, now.Add(time.Hour))
	}
	if !errors.Is(calls[1].Err, context.Canceled) {
		t.Errorf("the call whose context ended: %v, want its error", calls[1].Err)
	}

	calls = []*Call[int, int]{NewCall[int, int](early, 4), NewCall[int, int](context.Background(), 5)}
	l.Send(calls)
	for _, c := range calls {
		c.Wait()
	}
	if _, ok := got.Deadline(); ok {
		t.Error("a batch with a call without a deadline has one")
	}

	calls = []*Call[int, int]{NewCall[int, int](early, 6), NewCall[int, int](gone, 7)}
	l.Send(calls)
	calls[0].Wait()
	if len(sent) != 1 || sent[0] != 6 || got != early || calls[0].Reply != 6 {
		t.Errorf("a lone call: sent %v with %v, reply %d; want [6] alone with its context", sent, got, calls[0].Reply)
	}
}

// TestContextEndsWhileWaiting: a call queued while the lanes are busy
// returns its context's error when its context ends, and the lane that
// comes free goes on with the others, in one batch.
func TestContextEndsWhileWaiting(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var batched atomic.Int64
	l := New(1, 8, func(_ context.Context, q int) (int, error) {
		if q < 0 {
			close(entered)
			<-release // the lane is busy until released
		}
		return 2 * q, nil
	}, func(_ context.Context, calls []*Call[int, int]) {
		batched.Add(int64(len(calls)))
		for _, c := range calls {
			c.Reply = 2 * c.Req
		}
	})
	replies := make(chan int, 3)
	go func() {
		r, _ := l.Do(context.Background(), -1)
		replies <- r
	}()
	<-entered // the one lane is busy: the calls below queue
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error)
	go func() {
		_, err := l.Do(ctx, 100)
		queued <- err
	}()
	for _, q := range []int{2, 3} {
		go func() {
			r, _ := l.Do(context.Background(), q)
			replies <- r
		}()
	}
	cancel()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Errorf("a queued call whose context ended: %v, want its context's error", err)
	}
	close(release)
	if sum := <-replies + <-replies + <-replies; sum != -2+4+6 {
		t.Errorf("the replies add up to %d, want %d", sum, -2+4+6)
	}
	t.Logf("%d calls sent in a batch", batched.Load())
}

// TestLanesFree: once the calls are answered, every lane is free again.
func TestLanesFree(t *testing.T) {
	l := New(2, 8, double, func(_ context.Context, calls []*Call[int, int]) {
		for _, c := range calls {
			c.Reply = 2 * c.Req
		}
	})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() { _, _ = l.Do(context.Background(), i) })
	}
	wg.Wait()
	// A batch's lane frees itself after the callers have their replies:
	// wait for it under the lock.
	for {
		l.mu.Lock()
		busy, queued := l.busy, len(l.queued)
		l.mu.Unlock()
		if busy == 0 && queued == 0 {
			break
		}
		runtime.Gosched()
	}
}

// TestNoLanes: with no lanes (n 0), every call is sent alone, at once,
// whatever is in flight: none waits for another, and none is batched.
func TestNoLanes(t *testing.T) {
	l := New(0, 8, double, func(context.Context, []*Call[int, int]) {
		t.Error("a batch, with no lanes")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				q := g*1000 + i
				if r, err := l.Do(ctx, q); err != nil || r != 2*q {
					t.Errorf("Do(%d) = %d, %v; want %d", q, r, err, 2*q)
					return
				}
			}
		})
	}
	wg.Wait()
}

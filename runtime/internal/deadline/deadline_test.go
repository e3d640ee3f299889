package deadline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

type testKey struct{}

// TestStoreDeadlines: a store call's context carries its request's values,
// is not cancelled with the request, is bounded by the timeout less at most
// one step, ends with DeadlineExceeded (as do contexts derived from it), and
// deadlines move on with time and never back.
func TestStoreDeadlines(t *testing.T) {
	const timeout = 64 * time.Millisecond
	d := New(timeout)
	req, cancelReq := context.WithCancel(context.WithValue(context.Background(), testKey{}, "request value"))

	before := time.Now()
	ctx := d.Context(req)
	after := time.Now()
	if v := ctx.Value(testKey{}); v != "request value" {
		t.Errorf("value = %v, want the request's", v)
	}
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(before.Add(timeout-d.step)) || deadline.After(after.Add(timeout)) {
		t.Errorf("deadline %v after the call, want between %v and %v", deadline.Sub(before), timeout-d.step, timeout)
	}
	cancelReq()
	if err := ctx.Err(); err != nil {
		t.Fatalf("the store call's context ended with the request: %v", err)
	}

	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context derived from the store call's never ended")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("errors %v, %v; want DeadlineExceeded", ctx.Err(), child.Err())
	}
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("cause %v, want DeadlineExceeded, not the request's", cause)
	}

	// Deadlines never go back, and a later step gets a later one.
	da, _ := d.Context(context.Background()).Deadline()
	if db, _ := d.Context(context.Background()).Deadline(); db.Before(da) {
		t.Errorf("deadlines went back: %v then %v", da, db)
	}
	for start := time.Now(); ; {
		if c, _ := d.Context(context.Background()).Deadline(); c.After(da) {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the shared deadline never moved on")
		}
	}
}

// TestStoreDeadlinesIn: contextIn makes its first call's context in the
// caller's Ctx, like context's, and leaves it unchanged afterwards,
// making the next ones anew.
func TestStoreDeadlinesIn(t *testing.T) {
	d := New(time.Hour)
	req := context.WithValue(context.Background(), testKey{}, "request value")
	var kept Ctx
	early, _ := d.current(time.Since(d.epoch)).Deadline()
	first := d.ContextIn(&kept, req)
	late, _ := d.current(time.Since(d.epoch)).Deadline() // the same unless a step began meanwhile
	if first != context.Context(&kept) {
		t.Fatalf("first call's context %p, want the kept one %p", first, &kept)
	}
	if got, ok := first.Deadline(); !ok || got.Before(early) || got.After(late) || first.Value(testKey{}) != "request value" {
		t.Errorf("kept context: deadline %v, %v, value %v; want the step's (%v) and the request's value", got, ok, first.Value(testKey{}), early)
	}
	before := kept
	other := context.WithValue(context.Background(), testKey{}, "another request")
	second := d.ContextIn(&kept, other)
	if second == first || kept != before || second.Value(testKey{}) != "another request" {
		t.Errorf("second call: context %p (first %p), value %v; kept %+v, was %+v", second, first, second.Value(testKey{}), kept, before)
	}
}

// TestContextNow: ContextNow is ContextIn, and the time it returns is when
// it was called, to the monotonic clock.
func TestContextNow(t *testing.T) {
	d := New(time.Hour)
	req := context.WithValue(context.Background(), testKey{}, "request value")
	var kept Ctx
	before := time.Now()
	ctx, now := d.ContextNow(&kept, req)
	after := time.Now()
	if ctx != context.Context(&kept) || ctx.Value(testKey{}) != "request value" {
		t.Errorf("context %p, value %v; want the kept one %p and the request's value", ctx, ctx.Value(testKey{}), &kept)
	}
	if now.Before(before) || now.After(after) || time.Since(now) < 0 {
		t.Errorf("now %v, not between %v and %v", now, before, after)
	}
	if again, later := d.ContextNow(&kept, req); again == ctx || later.Before(now) {
		t.Errorf("second call: context %p (first %p), time %v before the first's %v", again, ctx, later, now)
	}
}

// BenchmarkWatchedCalls is what pgx does with every query's context, from
// parallel callers: context.AfterFunc on a store call's context, stopped
// when the query is done; with one deadline context per step (shards-1)
// and with New's shards.
func BenchmarkWatchedCalls(b *testing.B) {
	for _, n := range []int{1, shards} {
		b.Run(fmt.Sprintf("shards-%d", n), func(b *testing.B) {
			d := newShared(time.Hour, n)
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					stop := context.AfterFunc(d.Context(context.Background()), func() {})
					stop()
				}
			})
		})
	}
}

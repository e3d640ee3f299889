package redisstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// holdHook holds the first pipeline of GETs until release is closed and
// records how many commands each pipeline of GETs carried.
type holdHook struct {
	held, release chan struct{}
	mu            sync.Mutex // guards sizes
	sizes         []int
}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		if cmds[0].Name() != "get" { // a new connection's handshake
			h.mu.Unlock()
			return next(ctx, cmds)
		}
		h.sizes = append(h.sizes, len(cmds))
		first := len(h.sizes) == 1
		h.mu.Unlock()
		if first {
			close(h.held)
			<-h.release
		}
		return next(ctx, cmds)
	}
}

// TestLane: a call that finds the lane idle is sent at once, alone; the
// calls that arrive while it is on the wire go out together as the next
// pipeline, in arrival order, each with its own replies; a queued call
// whose context ends leaves the queue with the context's error and sends
// nothing.
func TestLane(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	hook := &holdHook{held: make(chan struct{}), release: make(chan struct{})}
	rdb.AddHook(hook)
	l := &lane{pipe: rdb}
	ctx := context.Background()

	get := func(ctx context.Context, key string) (*redis.StringCmd, chan struct{}) {
		cmd := redis.NewStringCmd(ctx, "get", key)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c := newCall(ctx, cmd)
			l.do(c)
			c.free()
		}()
		return cmd, done
	}
	for i := range 4 {
		mr.Set(fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	first, firstDone := get(ctx, "k0")
	<-hook.held // the first call is on the wire, alone
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
			l.mu.Lock()
			q := len(l.queue)
			l.mu.Unlock()
			if q == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d calls queued after 10 s; want %d", q, n)
			}
		}
	}
	second, secondDone := get(ctx, "k1")
	queued(1)
	leaving, cancel := context.WithCancel(ctx)
	gone, goneDone := get(leaving, "k2")
	queued(2)
	third, thirdDone := get(ctx, "k3")
	queued(3)
	cancel()
	<-goneDone
	if !errors.Is(gone.Err(), context.Canceled) {
		t.Errorf("the call whose context ended: %v; want context.Canceled", gone.Err())
	}
	queued(2)
	close(hook.release)
	for _, done := range []chan struct{}{firstDone, secondDone, thirdDone} {
		<-done
	}
	for i, cmd := range []*redis.StringCmd{first, second, third} {
		want := []string{"v0", "v1", "v3"}[i]
		if v, err := cmd.Result(); v != want || err != nil {
			t.Errorf("call %d: %q, %v; want %q", i, v, err, want)
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if fmt.Sprint(hook.sizes) != "[1 2]" {
		t.Errorf("pipelines of %v commands; want [1 2]: the first call alone, the two queued together", hook.sizes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy || len(l.queue) != 0 {
		t.Errorf("lane busy %v with %d queued after the last call; want idle", l.busy, len(l.queue))
	}
}

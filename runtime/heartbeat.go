package idem

import (
	"context"
	"errors"
	"sync"
	"time"
)

// heartbeat extends a lease every lock/3 while its handler runs. It holds no
// goroutine: a timer (time.AfterFunc) fires the first extension and is
// re-armed after each one, so a request that ends before lock/3, the usual
// case, costs one timer and nothing else. It is part of its lease, which
// starts and stops it.
type heartbeat struct {
	ctx   context.Context // the request's; extend detaches and bounds it
	lock  time.Duration
	every time.Duration

	mu      sync.Mutex    // guards timer, stopped and running, and the lease's extended
	timer   *time.Timer   // nil if the heartbeat never started
	stopped bool          // stopHeartbeat was called: do not extend or re-arm
	running chan struct{} // closed when the extension in flight ends; nil if none
}

// startHeartbeat starts extending the lease until stopHeartbeat is called
// (unless the heartbeat is off). The heartbeat ends by itself when the lease
// turns out to be lost.
func (l *lease) startHeartbeat(ctx context.Context) {
	if l.e.cfg.noHeartbeat {
		return
	}
	h := &l.hb
	h.ctx, h.lock = ctx, l.k.op.lock()
	h.every = max(h.lock/3, time.Millisecond)
	h.mu.Lock() // the timer may fire before h.timer is set
	h.timer = time.AfterFunc(h.every, l.tick)
	h.mu.Unlock()
}

// tick runs on the timer's goroutine: one extension, then re-arm.
func (l *lease) tick() {
	h := &l.hb
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	done := make(chan struct{})
	h.running = done
	h.mu.Unlock()

	start := time.Now()
	err := l.extend(h.ctx, h.lock)

	h.mu.Lock()
	if err == nil {
		l.extended = start
	}
	h.running = nil
	close(done)
	if !errors.Is(err, ErrNotOwner) && !h.stopped {
		h.timer.Reset(h.every)
	}
	h.mu.Unlock()
}

// stopHeartbeat ends the heartbeat and waits for an extension in flight, so
// none runs after it returns. It may be called more than once, and when the
// heartbeat never started.
func (l *lease) stopHeartbeat() {
	h := &l.hb
	h.mu.Lock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
	}
	running := h.running
	h.mu.Unlock()
	if running != nil {
		<-running
	}
}

// extend pushes the lease deadline. It returns nil when extended,
// ErrNotOwner once the lease is lost, or the store's error; it reports the
// failures. It runs detached from the request's cancellation and bounded by
// the store timeout, like completion and release.
func (l *lease) extend(ctx context.Context, lock time.Duration) error {
	sctx, s := l.startCall(ctx, "extend")
	err := l.e.store.Extend(l.e.deadlines.context(sctx), l.k.storageKey, l.token, lock)
	s.done(Event{Err: err})
	if err == nil {
		return nil
	}
	ev := Event{Fence: l.info.Fence, Err: err}
	if errors.Is(err, ErrNotOwner) {
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost while the handler runs")
		return err
	}
	l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: extend failed")
	return err
}

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
// case, costs one timer and nothing else.
type heartbeat struct {
	l     *lease
	ctx   context.Context // the request's; extend detaches and bounds it
	lock  time.Duration
	every time.Duration
	timer *time.Timer

	mu      sync.Mutex    // guards stopped and running
	stopped bool          // stop was called: do not extend or re-arm
	running chan struct{} // closed when the extension in flight ends; nil if none
}

// heartbeat starts extending the lease until the returned stop is called.
// stop waits for an extension in flight, so none runs after it returns; it
// may be called more than once. The heartbeat ends by itself when the
// lease turns out to be lost.
func (l *lease) heartbeat(ctx context.Context) (stop func()) {
	if l.e.cfg.noHeartbeat {
		return func() {}
	}
	lock := l.t.op.lock()
	h := &heartbeat{l: l, ctx: ctx, lock: lock, every: max(lock/3, time.Millisecond)}
	h.mu.Lock() // the timer may fire before h.timer is set
	h.timer = time.AfterFunc(h.every, h.tick)
	h.mu.Unlock()
	return h.stop
}

// tick runs on the timer's goroutine: one extension, then re-arm.
func (h *heartbeat) tick() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	done := make(chan struct{})
	h.running = done
	h.mu.Unlock()

	ok := h.l.extend(h.ctx, h.lock)

	h.mu.Lock()
	h.running = nil
	close(done)
	if ok && !h.stopped {
		h.timer.Reset(h.every)
	}
	h.mu.Unlock()
}

// stop ends the heartbeat and waits for an extension in flight.
func (h *heartbeat) stop() {
	h.mu.Lock()
	h.stopped = true
	h.timer.Stop()
	running := h.running
	h.mu.Unlock()
	if running != nil {
		<-running
	}
}

// extend pushes the lease deadline; it reports false once the lease is lost.
// It runs detached from the request's cancellation and bounded by the store
// timeout, like completion and release.
func (l *lease) extend(ctx context.Context, lock time.Duration) bool {
	sctx, cancel := l.detached(ctx)
	defer cancel()
	err := l.e.store.Extend(sctx, l.t.storageKey, l.token, lock)
	if err == nil {
		return true
	}
	ev := Event{Fence: l.info.Fence, Err: err}
	if errors.Is(err, ErrNotOwner) {
		l.e.report(ctx, l.t, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost while the handler runs")
		return false
	}
	l.e.report(ctx, l.t, l.e.cfg.hooks.StoreError, ev, levelError, "idem: extend failed")
	return true
}

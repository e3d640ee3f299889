package idem

import (
	"context"
	"errors"
	"sync"
	"time"
)

// heartbeat extends the lease every lock/3 until the returned stop is
// called. stop waits for the heartbeat goroutine to end, so no extension
// runs after it returns; it may be called more than once. The heartbeat
// ends by itself when the lease turns out to be lost.
func (l *lease) heartbeat(ctx context.Context) (stop func()) {
	if l.e.cfg.noHeartbeat {
		return func() {}
	}
	lock := l.t.op.lock()
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(max(lock/3, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if !l.extend(ctx, lock) {
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
		})
	}
}

// extend pushes the lease deadline; it reports false once the lease is lost.
func (l *lease) extend(ctx context.Context, lock time.Duration) bool {
	sctx, cancel := l.detached(ctx)
	defer cancel()
	err := l.e.store.Extend(sctx, l.t.storageKey, l.token, lock)
	if err == nil {
		return true
	}
	ev := l.t.event()
	ev.Fence, ev.Err = l.info.Fence, err
	if errors.Is(err, ErrNotOwner) {
		call(ctx, l.e.cfg.hooks.LeaseLost, ev)
		l.e.cfg.logger.LogAttrs(ctx, levelWarn, "idem: lease lost while the handler runs", logAttrs(ev)...)
		return false
	}
	call(ctx, l.e.cfg.hooks.StoreError, ev)
	l.e.cfg.logger.LogAttrs(ctx, levelError, "idem: extend failed", logAttrs(ev)...)
	return true
}

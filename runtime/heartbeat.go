package idem

import (
	"context"
	"errors"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/beat"
)

// heartbeat extends a lease every lock/3 while its handler runs (or keeps
// the transaction of an idemstore.LiveRunTx alive). It holds no
// goroutine and arms no timer of its own: the engine's scheduler
// (internal/beat) queues it with the other heartbeats of its interval, so a
// request that ends before lock/3, the usual case, costs no timer and no
// allocation. An extension runs on a goroutine of its own, then queues the
// heartbeat again. It is part of its lease, which starts and stops it.
type heartbeat struct {
	ctx  context.Context // the request's; extend detaches and bounds it
	lock time.Duration
	beat beat.Beat
}

// startHeartbeat starts extending the lease until stopHeartbeat is called
// (unless the heartbeat is off). The heartbeat ends by itself when the lease
// turns out to be lost.
func (l *lease) startHeartbeat(ctx context.Context) {
	if l.e.cfg.noHeartbeat {
		return
	}
	h := &l.hb
	h.ctx, h.lock = ctx, opLock(l.k.op)
	// From when the lease was taken, just before: no clock reading on the
	// way to the handler.
	l.e.beats.Start(&h.beat, l, max(h.lock/3, time.Millisecond), l.extended)
}

// Beat is one extension of the heartbeat, run by the engine's scheduler on
// a goroutine of its own; it beats again unless the lease is lost.
func (l *lease) Beat() bool {
	h := &l.hb
	if l.tx != nil {
		return !errors.Is(l.keepAlive(h.ctx), idemstore.ErrNotOwner)
	}
	start := time.Now()
	err := l.extend(h.ctx, h.lock)
	if err == nil {
		l.extended = start // read after stopHeartbeat, which waits for this
	}
	return !errors.Is(err, idemstore.ErrNotOwner)
}

// stopHeartbeat ends the heartbeat and waits for an extension in flight, so
// none runs after it returns. It may be called more than once, and when the
// heartbeat never started.
func (l *lease) stopHeartbeat() { l.hb.beat.Stop() }

// extend pushes the lease deadline. It returns nil when extended,
// idemstore.ErrNotOwner once the lease is lost, or the store's error; it reports the
// failures. It runs detached from the request's cancellation and bounded by
// the store timeout, like completion and release.
func (l *lease) extend(ctx context.Context, lock time.Duration) error {
	sctx, s := l.startCall(ctx, "extend")
	err := l.e.store.Extend(l.e.deadlines.Context(sctx), l.k.storageKey, l.token, lock)
	s.done(Event{Err: err})
	if err == nil {
		return nil
	}
	ev := Event{Fence: l.info.Fence, Err: err}
	if errors.Is(err, idemstore.ErrNotOwner) {
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: lease lost while the handler runs")
		return err
	}
	l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: extend failed")
	return err
}

// keepAlive keeps the run's transaction alive (idemstore.LiveRunTx), as
// extend pushes a lease: detached from the request's cancellation, bounded
// by the store timeout, its failures reported.
func (l *lease) keepAlive(ctx context.Context) error {
	sctx, s := l.startCall(ctx, "keepalive")
	err := l.tx.(idemstore.LiveRunTx).KeepAlive(l.e.deadlines.Context(sctx))
	s.done(Event{Err: err})
	if err == nil {
		return nil
	}
	ev := Event{Fence: l.info.Fence, Err: err}
	if errors.Is(err, idemstore.ErrNotOwner) {
		l.e.report(ctx, l.k, l.e.cfg.hooks.LeaseLost, ev, levelWarn, "idem: claim lost while the handler runs")
		return err
	}
	l.e.report(ctx, l.k, l.e.cfg.hooks.StoreError, ev, levelError, "idem: keep-alive failed")
	return err
}

package idem

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// unreplicated reports a result the store kept but could not confirm
// durable (ErrUnreplicated): the Unreplicated hook gets it, the log says so
// once per burst, and the client gets it marked Idempotency-Degraded, since
// a failover before a replica has it would let a retry run the handler
// again.
func (l *lease) unreplicated(ctx context.Context, resp *Response, err error) {
	ev := Event{Fence: l.info.Fence, Status: resp.Status, Err: err, Response: resp}
	msg := ""
	if n, ok := l.e.unreplicatedLog.take(time.Now()); ok {
		// A replica that is down or lagging affects every completion until
		// it is back: one line per burst says so, not one per request.
		msg = "idem: result stored but not acknowledged by a replica in time; the client gets it marked Idempotency-Degraded, " +
			"and a retry after a failover would run the handler again"
		if n > 0 {
			msg += fmt.Sprintf(" (%d more since the last such line)", n)
		}
	}
	l.e.report(withInfo(ctx, &l.info), l.k, l.e.cfg.hooks.Unreplicated, ev, levelWarn, msg)
	markDegraded(resp)
}

// markDegraded marks resp Idempotency-Degraded: true, the answer of a run
// whose protection did not hold (the store failed open, or no replica
// acknowledged its result).
func markDegraded(resp *Response) {
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	resp.Header.Set(idemop.HeaderDegraded, "true")
}

// Bounds of a burst of log lines (burstLog).
const (
	burstQuiet = 10 * time.Second // an event this long after the previous one starts a new burst
	burstEvery = time.Minute      // within a burst, at most one line this often
)

// burstLog decides which events of a kind are logged: the first of each
// burst (after burstQuiet without one), then at most one per burstEvery
// while the burst lasts. The zero value is ready; it is safe for
// concurrent use.
type burstLog struct {
	mu      sync.Mutex // guards the fields below
	last    time.Time  // the previous event
	logged  time.Time  // the previous logged event
	skipped int        // events not logged since then
}

// take records an event at now and tells whether to log it, and how many
// events went unlogged before it.
func (b *burstLog) take(now time.Time) (skipped int, log bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	quiet := b.last.IsZero() || now.Sub(b.last) >= burstQuiet
	b.last = now
	if !quiet && now.Sub(b.logged) < burstEvery {
		b.skipped++
		return 0, false
	}
	skipped, b.skipped, b.logged = b.skipped, 0, now
	return skipped, true
}

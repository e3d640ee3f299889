package sqlfamily

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrBusy is what a statement of the handler's gets while an earlier one's
// rows are still open on the run's connection, as a driver answers a
// connection used by two statements at once.
var ErrBusy = errors.New("conn busy: the run's transaction still has open rows; close them first")

// Turn shares a run's connection between the handler, whose statements run
// on it, and the keep-alive (idemstore.LiveRunTx), which sends a light
// command on it while the handler is busy elsewhere, so that the server does
// not end the transaction of a live owner as idle.
//
// The handler takes the turn for each statement ([Turn.Take]) and gives it
// back when the statement, and the rows it returned, are done
// ([Turn.Give]); a keep-alive waits for nothing ([Turn.Try]): while the
// handler holds the connection, its statement keeps the session from being
// idle, and nothing needs sending. Its zero value is ready.
type Turn struct {
	mu      sync.Mutex
	handler atomic.Bool // the handler holds mu
}

// Take gives the handler the connection, after a keep-alive in flight. It
// fails with [ErrBusy] when the handler holds it already (rows it has not
// closed), rather than waiting for itself.
func (t *Turn) Take() error {
	if t.handler.Load() {
		return ErrBusy
	}
	t.mu.Lock()
	t.handler.Store(true)
	return nil
}

// Wait gives the handler the connection after whatever holds it: a
// keep-alive, or another statement of the handler's (for a driver that
// serializes statements itself and whose rows do not hold the turn).
func (t *Turn) Wait() {
	t.mu.Lock()
	t.handler.Store(true)
}

// Give ends the handler's turn.
func (t *Turn) Give() {
	t.handler.Store(false)
	t.mu.Unlock()
}

// Try runs keep (a keep-alive's command) if the connection is free, and
// reports whether it ran. A statement of the handler's that comes meanwhile
// waits for keep.
func (t *Turn) Try(keep func() error) (ran bool, err error) {
	if !t.mu.TryLock() {
		return false, nil
	}
	defer t.mu.Unlock()
	return true, keep()
}

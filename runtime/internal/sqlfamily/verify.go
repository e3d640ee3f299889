package sqlfamily

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// How often a store runs Check on its own: every verifyEvery while the
// table (and server) are fine, every verifyMisconfiguredEvery while not.
const (
	verifyEvery              = 30 * time.Second
	verifyMisconfiguredEvery = time.Second
)

// verification is the outcome of the store's last Check.
type verification struct {
	at  time.Time
	err error // nil, or a *idemstore.StoreError matching idemstore.ErrStoreMisconfigured
}

// verifier runs Check before the store's first acquire and again when the
// last outcome is old, so that a table or server the store cannot keep its
// promise on is refused before a handler runs, not found out at the
// completion (when the handler's outside effects have happened and a retry
// would run it again) or at a crash (when a commit is lost).
type verifier struct {
	last atomic.Pointer[verification]
	mu   sync.Mutex // held by the one caller that runs Check
}

// Verified returns the misconfiguration that refuses acquires, if any: the
// last Check's, running Check first when its outcome is missing or old. A
// Check that fails without a verdict (the database unreachable) does not
// change the last outcome; without one, the dialect says whether its error
// is returned (no handler runs on a store never verified) or nil (the
// acquire reports it). Callers that find a Check under way use the last
// outcome, or wait for the first.
func (c *Core) Verified(ctx context.Context) error {
	last := c.verify.last.Load()
	if last != nil && time.Since(last.at) < last.every() {
		return last.err
	}
	if last != nil {
		if !c.verify.mu.TryLock() {
			return last.err
		}
	} else {
		c.verify.mu.Lock()
	}
	defer c.verify.mu.Unlock()
	if cur := c.verify.last.Load(); cur != last {
		return cur.err // another caller checked meanwhile
	}
	err := c.Check(ctx)
	if err != nil && !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		switch {
		case last != nil:
			return last.err // the last verdict stands
		case c.Dialect.UnverifiedFails:
			return err
		}
		return nil
	}
	c.verify.last.Store(&verification{at: time.Now(), err: err})
	return err
}

// every is how long v stands.
func (v *verification) every() time.Duration {
	if v.err != nil {
		return verifyMisconfiguredEvery
	}
	return verifyEvery
}

// Refused records err, an error of op, one of the store's own statements,
// as the store's misconfiguration when the database refused the statement
// for what the table or server is (Dialect.Refused: a column too narrow, a
// constraint, a trigger that raised): acquires are refused until a Check,
// a second from now, finds everything fine. It returns err, as a
// misconfiguration in that case.
func (c *Core) Refused(op string, err error) error {
	msg, cause, ok := c.Dialect.Refused(err)
	if !ok {
		return err
	}
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		err = &idemstore.StoreError{Op: op, Err: &ConfigError{Msg: msg, Err: cause}}
	}
	c.verify.last.Store(&verification{at: time.Now(), err: err})
	return err
}

package mysqlstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// How often the store runs Check on its own: every verifyEvery while the
// table and server are fine, every verifyMisconfiguredEvery while not.
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

// verified returns the misconfiguration that refuses acquires, if any: the
// last Check's, running Check first when its outcome is missing or old. A
// Check that fails without a verdict (the database unreachable) does not
// change the last outcome, and without one its error is returned (503
// store-unavailable): no handler runs on a store never verified. Callers
// that find a Check under way use the last outcome, or wait for the first.
func (s *Store) verified(ctx context.Context) error {
	last := s.verify.last.Load()
	if last != nil && time.Since(last.at) < last.every() {
		return last.err
	}
	if last != nil {
		if !s.verify.mu.TryLock() {
			return last.err
		}
	} else {
		s.verify.mu.Lock()
	}
	defer s.verify.mu.Unlock()
	if cur := s.verify.last.Load(); cur != last {
		return cur.err // another caller checked meanwhile
	}
	err := s.Check(ctx)
	if err != nil && !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		if last != nil {
			return last.err // the last verdict stands
		}
		return err // never verified: no handler runs
	}
	s.verify.last.Store(&verification{at: time.Now(), err: err})
	return err
}

// every is how long v stands.
func (v *verification) every() time.Duration {
	if v.err != nil {
		return verifyMisconfiguredEvery
	}
	return verifyEvery
}

// refused records err, an error of one of the store's own statements, as
// the store's misconfiguration when the database refused the statement for
// what the table or server is (a column too narrow, a constraint, a trigger
// that signalled, a packet too large): acquires are refused until a Check,
// a second from now, finds everything fine. It returns err, as a
// misconfiguration in that case.
func (s *Store) refused(op string, err error) error {
	msg, ok := statementRefusedByTable(err)
	if !ok {
		return err
	}
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		err = &idemstore.StoreError{Op: op, Err: &configError{
			msg: msg + ": the records' table or the server refuses the store's statements; run Store.Check for what to change",
			err: cause(err),
		}}
	}
	s.verify.last.Store(&verification{at: time.Now(), err: err})
	return err
}

// cause is the database's error inside err, a *idemstore.StoreError.
func cause(err error) error {
	var se *idemstore.StoreError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

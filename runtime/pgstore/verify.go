package pgstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// How often the store runs Check on its own: every verifyEvery while the
// table is fine, every verifyMisconfiguredEvery while it is not.
const (
	verifyEvery              = 30 * time.Second
	verifyMisconfiguredEvery = time.Second
)

// verification is the outcome of the store's last Check of its table.
type verification struct {
	at  time.Time
	err error // nil, or a *idemstore.StoreError matching idemstore.ErrStoreMisconfigured
}

// verifier runs Check before the store's first acquire and again when the
// last outcome is old, so that a table the store cannot complete on is
// refused before a handler runs, not found out at the completion (when the
// handler's outside effects have happened and a retry would run it again).
type verifier struct {
	last atomic.Pointer[verification]
	mu   sync.Mutex // held by the one caller that runs Check
}

// verified returns the misconfiguration that refuses acquires, if any: the
// last Check's, running Check first when its outcome is missing or old. An
// unreachable database does not change the outcome (the acquire then fails
// on its own); callers that find a Check under way use the last outcome,
// or wait for the first.
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
			return last.err
		}
		return nil // unreachable: the acquire reports it
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
// what the table is (a type too narrow, a constraint, a trigger that
// raised): acquires are refused until a Check, a second from now, finds
// the table fine. It returns err, as a misconfiguration in that case.
func (s *Store) refused(op string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !statementRefusedByTable(pe.Code) {
		return err
	}
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) {
		err = &idemstore.StoreError{Op: op, Err: &configError{
			msg: pe.Message + " (SQLSTATE " + pe.Code + "): the records' table refuses the store's statements; run Store.Check for what to change",
			err: pe,
		}}
	}
	s.verify.last.Store(&verification{at: time.Now(), err: err})
	return err
}

// statementRefusedByTable reports whether code, an error of one of the
// store's own statements, comes from how the table is set up rather than
// from the database's state: a value too long for the column (22001; not
// the rest of class 22, which arguments can cause), integrity violations
// (class 23: NOT NULL, CHECK, foreign key, or a unique index other than
// the key's, whose conflicts ON CONFLICT handles), a trigger or rule that
// raised (P0001), and the codes storeError already calls misconfigured.
func statementRefusedByTable(code string) bool {
	switch {
	case code == "22001", len(code) == 5 && code[:2] == "23":
		return true
	case code == "P0001", code == "42P01", code == "42703", code == "42501", code == "42P10", code == "42804":
		return true
	}
	return false
}

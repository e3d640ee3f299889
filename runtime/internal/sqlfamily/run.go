package sqlfamily

import (
	"context"
	"errors"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// LookupTimeout bounds the lookup of a COMMIT whose answer was lost
// ([Dialect.LostCommit]), and the ROLLBACK of a run's connection given
// back: they wait for the committing transaction to end, which a slow
// COMMIT (a synchronous replica, a deferred trigger, a flush that waits
// for the disk) can make longer than the store timeout the COMMIT itself
// had.
const LookupTimeout = 10 * time.Second

// Changed is the answer of op, a statement of the store's own that
// changes the row token owns, which changed rows rows or failed with err:
// the failure as a *idemstore.StoreError (a misconfiguration when the
// database refused the statement for what the table is: [Core.Refused]),
// or [idemstore.ErrNotOwner] when it changed none.
func (c *Core) Changed(op string, rows int64, err error) error {
	if err != nil {
		return c.Refused(op, c.Dialect.StoreError(op, err))
	}
	return Owned(rows)
}

// LostCommit is the answer of a run's COMMIT that failed with err without
// the server's answer, so that the transaction may have committed: lookup
// tells whether it did, and nil is returned if so. lookup gets a context
// of its own, bounded by LookupTimeout and not by ctx: the COMMIT may have
// outlived ctx's deadline, and a lookup on ctx would then fail at once
// without asking.
func (d *Dialect) LostCommit(ctx context.Context, err error, lookup func(context.Context) (bool, error)) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LookupTimeout)
	defer cancel()
	committed, lerr := lookup(lctx)
	switch {
	case lerr != nil:
		return d.StoreError("commit", errors.Join(err, errors.New("its outcome could not be looked up"), lerr))
	case committed:
		return nil
	}
	return d.StoreError("commit", err)
}

// RolledBack is the answer of a run's ROLLBACK that failed with err (nil
// for none): a transaction that had ended, or whose connection is gone
// (the server rolls it back with the connection), is rolled back (ended).
func (d *Dialect) RolledBack(err error, ended bool) error {
	if err == nil || ended {
		return nil
	}
	return d.StoreError("rollback", err)
}

// KeptAlive is the answer of a run's keep-alive that failed with err (nil
// for none): a connection that is gone (lost: the server ended the
// transaction) is a lost claim, [idemstore.ErrNotOwner].
func (d *Dialect) KeptAlive(err error, lost bool) error {
	switch {
	case err == nil:
		return nil
	case lost:
		return idemstore.ErrNotOwner
	}
	return d.StoreError("keepalive", err)
}

package idemstoretest

import (
	"context"
	"errors"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// txStore returns the store under test as a TxStore, or skips the check.
func (c *checker) txStore() idemstore.TxStore {
	c.Helper()
	ts, ok := c.s().(idemstore.TxStore)
	if !ok {
		c.Skip("not a TxStore")
	}
	return ts
}

// beginRun opens the run's transaction, failing the check on an error.
func (c *checker) beginRun(ts idemstore.TxStore, key, tok string, fence int64) idemstore.RunTx {
	c.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	tx, err := ts.BeginRun(ctx, key, tok, fence)
	if err != nil || tx == nil {
		c.Fatalf("BeginRun: %v, %v", tx, err)
	}
	return tx
}

// write writes mark through tx, when the harness can (Harness.TxWrite).
func (c *checker) write(tx idemstore.RunTx, mark string) {
	c.Helper()
	if c.h.TxWrite == nil {
		return
	}
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.h.TxWrite(tx.Context(ctx), mark); err != nil {
		c.Fatalf("Harness.TxWrite in the run's transaction: %v", err)
	}
}

// marked checks whether mark is committed, when the harness can tell
// (Harness.TxMarked).
func (c *checker) marked(what, mark string, want bool) {
	c.Helper()
	if c.h.TxMarked == nil {
		return
	}
	ctx, cancel := c.ctx()
	defer cancel()
	got, err := c.h.TxMarked(ctx, mark)
	switch {
	case err != nil:
		c.Fatalf("Harness.TxMarked: %v", err)
	case got != want && want:
		c.Errorf("%s: the run's write is not committed", what)
	case got != want:
		c.Errorf("%s: the run's write is committed", what)
	}
}

// txCommit: a run's write and its record commit together: neither is
// visible before Commit, both after; Rollback after Commit does nothing.
func txCommit(c *checker) {
	ts := c.txStore()
	k, owner, rec, mark := c.key(), token(), created(), token()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	tx := c.beginRun(ts, k, owner, 1)
	c.write(tx, mark)
	c.marked("before Commit", mark, false)
	c.want("before Commit", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	ctx, cancel := c.ctx()
	defer cancel()
	c.ok("Commit", tx.Commit(ctx, copyRecord(rec), time.Hour))
	c.marked("after Commit", mark, true)
	c.wantReplay("after Commit", k, fpA, rec)
	c.ok("Rollback after Commit", tx.Rollback(ctx))
	c.marked("after Rollback after Commit", mark, true)
	c.wantReplay("after Rollback after Commit", k, fpA, rec)
}

// txRollback: a rolled-back run leaves nothing: not its write, and, once
// the lease is released as the engine releases it, no record.
func txRollback(c *checker) {
	ts := c.txStore()
	k, owner, mark := c.key(), token(), token()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	tx := c.beginRun(ts, k, owner, 1)
	c.write(tx, mark)
	ctx, cancel := c.ctx()
	defer cancel()
	c.ok("Rollback", tx.Rollback(ctx))
	c.marked("after Rollback", mark, false)
	c.want("after Rollback, the lease still held", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	c.ok("Release after Rollback", c.release(k, owner))
	c.want("after Release", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
}

// txStaleCommit: the Commit of a run whose lease was taken over meanwhile
// is refused with ErrNotOwner and rolls its write back; the newer owner's
// record is intact.
func txStaleCommit(c *checker) {
	ts := c.txStore()
	lease, k, stale, mark := c.h.Lease, c.key(), token(), token()
	since := time.Now()
	c.want("new key", c.acquire(k, stale, fpA, lease), idemstore.OutcomeFirstRun, 1)
	tx := c.beginRun(ts, k, stale, 1)
	c.write(tx, mark)
	owner, acq := c.takeOver("the lease lapsed", k, fpA, since, lease, time.Minute)
	c.want("the lease lapsed", acq, idemstore.OutcomeRecovered, 2)
	ctx, cancel := c.ctx()
	defer cancel()
	if err := tx.Commit(ctx, created(), time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		c.Errorf("Commit by the stale run: %v, want ErrNotOwner", err)
	}
	_ = tx.Rollback(context.WithoutCancel(ctx)) // as the engine does; nothing to do after a refused Commit
	c.marked("after the stale run's Commit", mark, false)
	c.want("after the stale run's Commit", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	rec := created()
	c.ok("Complete by the newer owner", c.complete(k, owner, rec, time.Hour))
	c.wantReplay("after the newer owner's Complete", k, fpA, rec)
}

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

// acquireRun runs AcquireRun, failing the check on an error or on a
// transaction returned with the wrong answer: one exactly for a first run
// or a takeover.
func (c *checker) acquireRun(ts idemstore.TxStore, key, tok, fp string, lease time.Duration) (idemstore.Acquisition, idemstore.RunTx) {
	c.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	acq, tx, err := ts.AcquireRun(ctx, idemstore.AcquireRequest{Key: key, Token: tok, Fingerprint: fp, Lease: lease})
	if err != nil {
		c.Fatalf("AcquireRun: %v", err)
	}
	claimed := acq.Outcome == idemstore.OutcomeFirstRun || acq.Outcome == idemstore.OutcomeRecovered
	switch {
	case claimed && tx == nil:
		c.Fatalf("AcquireRun answered %s without a transaction", outcomeName(acq.Outcome))
	case !claimed && tx != nil:
		_ = tx.Rollback(ctx)
		c.Fatalf("AcquireRun answered %s with a transaction", outcomeName(acq.Outcome))
	}
	return acq, tx
}

// claim claims a key with AcquireRun and checks that it is a first run (or,
// with takeover, a first run or a takeover) with a fence above after.
func (c *checker) claim(what string, ts idemstore.TxStore, key, tok, fp string, lease time.Duration, after int64) (idemstore.Acquisition, idemstore.RunTx) {
	c.Helper()
	acq, tx := c.acquireRun(ts, key, tok, fp, lease)
	if tx == nil {
		c.Fatalf("%s: AcquireRun answered %s (%+v), want a claim", what, outcomeName(acq.Outcome), acq)
	}
	if acq.Fence <= after {
		c.Errorf("%s: claimed with fence %d, want one above %d", what, acq.Fence, after)
	}
	return acq, tx
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

// txCommit: a claim, the run's write and its record commit together:
// neither is visible before Commit, both after; while the claim is open,
// AcquireRun and Acquire answer a conflict; Rollback after Commit does
// nothing.
func txCommit(c *checker) {
	ts := c.txStore()
	k, owner, rec, mark := c.key(), token(), created(), token()
	_, tx := c.claim("new key", ts, k, owner, fpA, time.Minute, 0)
	c.write(tx, mark)
	c.marked("before Commit", mark, false)
	if acq, _ := c.acquireRun(ts, k, token(), fpA, time.Minute); acq.Outcome != idemstore.OutcomeConflict {
		c.Errorf("AcquireRun while the claim is open: %s, want conflict", outcomeName(acq.Outcome))
	} else if acq.Remaining <= 0 || acq.Remaining > time.Minute {
		c.Errorf("AcquireRun while the claim is open: conflict with remaining %v, want it in (0, the lease]", acq.Remaining)
	}
	c.want("Acquire while the claim is open", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	ctx, cancel := c.ctx()
	defer cancel()
	c.ok("Commit", tx.Commit(ctx, copyRecord(rec), time.Hour))
	c.marked("after Commit", mark, true)
	c.wantReplay("after Commit", k, fpA, rec)
	if acq, _ := c.acquireRun(ts, k, token(), fpA, time.Minute); acq.Outcome != idemstore.OutcomeReplay {
		c.Errorf("AcquireRun after Commit: %s, want replay", outcomeName(acq.Outcome))
	}
	if acq, _ := c.acquireRun(ts, k, token(), fpB, time.Minute); acq.Outcome != idemstore.OutcomeMismatch {
		c.Errorf("AcquireRun of another payload after Commit: %s, want mismatch", outcomeName(acq.Outcome))
	}
	c.ok("Rollback after Commit", tx.Rollback(ctx))
	c.marked("after Rollback after Commit", mark, true)
	c.wantReplay("after Rollback after Commit", k, fpA, rec)
}

// txRollback: a rolled-back claim leaves nothing, not its write and no
// record: the key is claimed again at once, with a higher fence.
func txRollback(c *checker) {
	ts := c.txStore()
	k, owner, mark := c.key(), token(), token()
	first, tx := c.claim("new key", ts, k, owner, fpA, time.Minute, 0)
	c.write(tx, mark)
	ctx, cancel := c.ctx()
	defer cancel()
	c.ok("Rollback", tx.Rollback(ctx))
	c.marked("after Rollback", mark, false)
	_, tx = c.claim("after Rollback", ts, k, token(), fpB, time.Minute, first.Fence)
	c.ok("Rollback", tx.Rollback(ctx))
	c.want("Acquire after Rollback", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
}

// txStaleCommit: a frozen owner's claim is ended by the store once its
// transaction has been idle for the lease: a duplicate is answered a
// conflict until then and claims the key after, with a higher fence; the
// stale owner's Commit is refused with ErrNotOwner and commits nothing, and
// the newer owner's record is intact.
func txStaleCommit(c *checker) {
	ts := c.txStore()
	lease, k, stale, mark := c.h.Lease, c.key(), token(), token()
	first, tx := c.claim("new key", ts, k, stale, fpA, lease, 0)
	c.write(tx, mark)
	since := time.Now()
	owner, acq, newer := c.claimAfter("the stale owner's claim ended", ts, k, fpA, since, lease)
	if acq.Fence <= first.Fence {
		c.Errorf("the newer claim's fence %d is not above the stale one's %d", acq.Fence, first.Fence)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	if err := tx.Commit(ctx, created(), time.Hour); !errors.Is(err, idemstore.ErrNotOwner) {
		c.Errorf("Commit by the stale run: %v, want ErrNotOwner", err)
	}
	_ = tx.Rollback(context.WithoutCancel(ctx)) // as the engine does; nothing to do after Commit
	c.marked("after the stale run's Commit", mark, false)
	if acq, _ := c.acquireRun(ts, k, token(), fpA, time.Minute); acq.Outcome != idemstore.OutcomeConflict {
		c.Errorf("AcquireRun after the stale run's Commit: %s, want conflict (the newer claim is open)", outcomeName(acq.Outcome))
	}
	rec := created()
	c.ok("Commit by the newer owner", newer.Commit(ctx, copyRecord(rec), time.Hour))
	c.wantReplay("after the newer owner's Commit", k, fpA, rec)
	_ = owner
}

// claimAfter claims key once the open claim on it, taken at since with
// lease, has been ended by the store: with Advance it moves the clock past
// the lease first; otherwise it tries every Remaining, for at most the
// lease plus Timeout. A claim taken well before the lease is reported.
func (c *checker) claimAfter(what string, ts idemstore.TxStore, key, fp string, since time.Time, lease time.Duration) (string, idemstore.Acquisition, idemstore.RunTx) {
	c.Helper()
	if c.h.Advance != nil {
		c.h.Advance(lease)
	}
	deadline := since.Add(lease + c.h.Timeout)
	for {
		tok := token()
		acq, tx := c.acquireRun(ts, key, tok, fp, time.Minute)
		if tx != nil {
			if elapsed := time.Since(since); c.h.Advance == nil && elapsed < lease-lease/10 {
				c.Errorf("%s: claimed %v after the claim of lease %v was last used", what, elapsed.Round(time.Millisecond), lease)
			}
			return tok, acq, tx
		}
		if acq.Outcome != idemstore.OutcomeConflict {
			c.Fatalf("%s: AcquireRun answered %s, want a conflict or a claim", what, outcomeName(acq.Outcome))
		}
		if time.Now().After(deadline) {
			c.Fatalf("%s: the claim of lease %v has not ended %v after it was last used", what, lease, time.Since(since).Round(time.Millisecond))
		}
		time.Sleep(min(acq.Remaining, lease/5) + time.Millisecond)
	}
}

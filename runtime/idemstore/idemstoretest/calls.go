package idemstoretest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// outcomeNames are the outcomes as the checks name them.
var outcomeNames = map[idemstore.Outcome]string{
	idemstore.OutcomeFirstRun:  "first run",
	idemstore.OutcomeRecovered: "recovered",
	idemstore.OutcomeReplay:    "replay",
	idemstore.OutcomeConflict:  "conflict",
	idemstore.OutcomeMismatch:  "mismatch",
}

func outcomeName(o idemstore.Outcome) string {
	if n, ok := outcomeNames[o]; ok {
		return n
	}
	return fmt.Sprintf("outcome %d", o)
}

// acquire runs Acquire, failing the check on an error.
func (c *checker) acquire(key, tok, fp string, lease time.Duration) idemstore.Acquisition {
	c.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	acq, err := c.s().Acquire(ctx, idemstore.AcquireRequest{Key: key, Token: tok, Fingerprint: fp, Lease: lease})
	if err != nil {
		c.Fatalf("Acquire: %v", err)
	}
	return acq
}

// want checks acq's outcome and, for a first run or a takeover, its fence;
// it fails the check on another outcome, since what follows builds on it.
func (c *checker) want(what string, acq idemstore.Acquisition, o idemstore.Outcome, fence int64) {
	c.Helper()
	if acq.Outcome != o {
		c.Fatalf("%s: Acquire answered %s (%+v), want %s", what, outcomeName(acq.Outcome), acq, outcomeName(o))
	}
	if (o == idemstore.OutcomeFirstRun || o == idemstore.OutcomeRecovered) && acq.Fence != fence {
		c.Errorf("%s: %s with fence %d, want %d", what, outcomeName(o), acq.Fence, fence)
	}
	if o == idemstore.OutcomeReplay && acq.Record == nil {
		c.Fatalf("%s: replay without a record", what)
	}
	if o == idemstore.OutcomeConflict && acq.Remaining <= 0 {
		c.Errorf("%s: conflict with remaining lease %v, want it > 0", what, acq.Remaining)
	}
}

// wantReplay acquires key with fingerprint fp and checks that it replays
// rec.
func (c *checker) wantReplay(what, key, fp string, rec *idemstore.Record) {
	c.Helper()
	acq := c.acquire(key, token(), fp, time.Minute)
	c.want(what, acq, idemstore.OutcomeReplay, 0)
	if diff := recordDiff(acq.Record, rec); diff != "" {
		c.Errorf("%s: replayed record differs: %s", what, diff)
	}
}

// complete runs Complete and returns its error.
func (c *checker) complete(key, tok string, rec *idemstore.Record, retention time.Duration) error {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.s().Complete(ctx, key, tok, copyRecord(rec), retention)
}

// release runs Release and returns its error.
func (c *checker) release(key, tok string) error {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.s().Release(ctx, key, tok)
}

// extend runs Extend and returns its error.
func (c *checker) extend(key, tok string, lease time.Duration) error {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.s().Extend(ctx, key, tok, lease)
}

// ok reports a call that should have succeeded and did not.
func (c *checker) ok(what string, err error) {
	c.Helper()
	if err != nil {
		c.Fatalf("%s: %v", what, err)
	}
}

// notOwner reports a call that should have been refused with ErrNotOwner
// and was not.
func (c *checker) notOwner(what string, err error) {
	c.Helper()
	if !errors.Is(err, idemstore.ErrNotOwner) {
		c.Errorf("%s: %v, want ErrNotOwner", what, err)
	}
}

// takeOver waits until the lease on key, taken at since for lease, lapses,
// and takes it over with fingerprint fp for newLease: with Advance it moves
// the clock past the lease, otherwise it acquires again and again, each
// time after the remaining lease the store answers, for at most the lease
// plus Timeout. A takeover well before the lease has lapsed (by the
// checks's own clock, which started before the lease did) is reported.
func (c *checker) takeOver(what, key, fp string, since time.Time, lease, newLease time.Duration) (string, idemstore.Acquisition) {
	c.Helper()
	if c.h.Advance != nil {
		c.h.Advance(lease)
		tok := token()
		return tok, c.acquire(key, tok, fp, newLease)
	}
	deadline := since.Add(lease + c.h.Timeout)
	for {
		tok := token()
		acq := c.acquire(key, tok, fp, newLease)
		if acq.Outcome != idemstore.OutcomeConflict {
			if elapsed := time.Since(since); acq.Outcome == idemstore.OutcomeRecovered && elapsed < lease-lease/10 {
				c.Errorf("%s: taken over %v after the lease of %v began", what, elapsed.Round(time.Millisecond), lease)
			}
			return tok, acq
		}
		if acq.Remaining > lease {
			c.Fatalf("%s: conflict with remaining lease %v, longer than the lease of %v", what, acq.Remaining, lease)
		}
		if time.Now().After(deadline) {
			c.Fatalf("%s: the lease of %v has not lapsed %v after it began (remaining %v)", what, lease, time.Since(since).Round(time.Millisecond), acq.Remaining)
		}
		time.Sleep(acq.Remaining + time.Millisecond)
	}
}

// waitGone waits until the record of key, completed at since for
// retention, is gone, and returns the first run that then acquires it
// with fingerprint fp: with Advance it moves the clock past the retention,
// otherwise it acquires every tenth of the retention while the record
// replays, for at most the retention plus Timeout. A record gone well
// before its retention is reported.
func (c *checker) waitGone(what, key, fp string, since time.Time, retention time.Duration) idemstore.Acquisition {
	c.Helper()
	if c.h.Advance != nil {
		c.h.Advance(retention)
		return c.acquire(key, token(), fp, time.Minute)
	}
	deadline := since.Add(retention + c.h.Timeout)
	for {
		acq := c.acquire(key, token(), fp, time.Minute)
		if acq.Outcome != idemstore.OutcomeReplay {
			if elapsed := time.Since(since); elapsed < retention-retention/10 {
				c.Errorf("%s: the record was gone %v after it was completed, before its retention of %v", what, elapsed.Round(time.Millisecond), retention)
			}
			return acq
		}
		if time.Now().After(deadline) {
			c.Fatalf("%s: the record is still replayed %v after it was completed for %v", what, time.Since(since).Round(time.Millisecond), retention)
		}
		time.Sleep(max(retention/10, time.Millisecond))
	}
}

// copyRecord returns a deep copy of rec, so that a store that keeps what it
// is given cannot make a replay look right.
func copyRecord(rec *idemstore.Record) *idemstore.Record {
	cp := *rec
	cp.Header = rec.Header.Clone()
	cp.Body = bytes.Clone(rec.Body)
	return &cp
}

// recordDiff says how got differs from want, "" if it does not: the status,
// the headers (nil and empty alike), the body (nil and empty alike) and
// BodyOmitted.
func recordDiff(got, want *idemstore.Record) string {
	switch {
	case got.Status != want.Status:
		return fmt.Sprintf("status %d, want %d", got.Status, want.Status)
	case (len(got.Header) != 0 || len(want.Header) != 0) && !reflect.DeepEqual(got.Header, want.Header):
		return fmt.Sprintf("header %v, want %v", got.Header, want.Header)
	case !bytes.Equal(got.Body, want.Body):
		return fmt.Sprintf("a body of %d bytes, want the %d bytes stored", len(got.Body), len(want.Body))
	case got.BodyOmitted != want.BodyOmitted:
		return fmt.Sprintf("BodyOmitted %v, want %v", got.BodyOmitted, want.BodyOmitted)
	}
	return ""
}

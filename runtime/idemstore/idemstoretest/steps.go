package idemstoretest

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// stepStore returns the store under test as a StepStore, or skips the
// check.
func (c *checker) stepStore() idemstore.StepStore {
	c.Helper()
	ss, ok := c.s().(idemstore.StepStore)
	if !ok {
		c.Skip("not a StepStore")
	}
	return ss
}

// step runs one step of the run that owns key with tok and fence: it
// begins it and journals result as name's. It returns the first error
// (BeginStep's or Commit's), having rolled the step back after a refused
// Commit as the engine does.
func (c *checker) step(ss idemstore.StepStore, key, tok string, fence int64, name string, result []byte) error {
	c.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	tx, err := ss.BeginStep(ctx, key, tok, fence)
	if err != nil {
		return err
	}
	if err := tx.Commit(tx.Context(ctx), name, result, time.Hour); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return nil
}

// wantSteps checks that the run owning key with tok loads exactly want.
func (c *checker) wantSteps(what string, ss idemstore.StepStore, key, tok string, want map[string][]byte) {
	c.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	got, err := ss.LoadSteps(ctx, key, tok)
	if err != nil {
		c.Fatalf("%s: LoadSteps: %v", what, err)
	}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		c.Errorf("%s: LoadSteps has steps %q, want %q", what, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		for name, w := range want {
			if g, ok := got[name]; ok && !bytes.Equal(g, w) {
				c.Errorf("%s: step %q loads %q, want %q", what, name, g, w)
			}
		}
	}
}

// stepJournal: the steps a run journals are loaded by that run, byte for
// byte, and by no run of another key.
func stepJournal(c *checker) {
	ss := c.stepStore()
	k, other, owner := c.key(), c.key(), token()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.wantSteps("before any step", ss, k, owner, map[string][]byte{})
	reserve, charge := []byte(`{"hold":"h-1"}`), []byte{0, 1, 2, 0xff}
	c.ok("step reserve", c.step(ss, k, owner, 1, "reserve", reserve))
	c.ok("step charge", c.step(ss, k, owner, 1, "charge", charge))
	c.wantSteps("after two steps", ss, k, owner, map[string][]byte{"reserve": reserve, "charge": charge})
	otherOwner := token()
	c.want("another new key", c.acquire(other, otherOwner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.wantSteps("another key", ss, other, otherOwner, map[string][]byte{})
}

// stepsAfterTakeover: the run that takes a lapsed lease over loads the
// steps the stale run journaled; the stale run can neither journal
// another step nor load the journal, and the newer run's journal is
// intact.
func stepsAfterTakeover(c *checker) {
	ss := c.stepStore()
	lease, k, stale := c.h.Lease, c.key(), token()
	since := time.Now()
	c.want("new key", c.acquire(k, stale, fpA, lease), idemstore.OutcomeFirstRun, 1)
	reserve := []byte(`"reserved"`)
	c.ok("step reserve by the first run", c.step(ss, k, stale, 1, "reserve", reserve))
	owner, acq := c.takeOver("the lease lapsed", k, fpA, since, lease, time.Minute)
	c.want("the lease lapsed", acq, idemstore.OutcomeRecovered, 2)
	c.wantSteps("the newer run", ss, k, owner, map[string][]byte{"reserve": reserve})
	c.notOwner("step charge by the stale run", c.step(ss, k, stale, 1, "charge", []byte(`"stale"`)))
	ctx, cancel := c.ctx()
	defer cancel()
	if _, err := ss.LoadSteps(ctx, k, stale); !errors.Is(err, idemstore.ErrNotOwner) {
		c.Errorf("LoadSteps by the stale run: %v, want ErrNotOwner", err)
	}
	c.notOwner("step charge with the newer token and the stale fence", c.step(ss, k, owner, 1, "charge", []byte(`"stale fence"`)))
	charge := []byte(`"charged"`)
	c.ok("step charge by the newer run", c.step(ss, k, owner, 2, "charge", charge))
	c.wantSteps("after the newer run's step", ss, k, owner, map[string][]byte{"reserve": reserve, "charge": charge})
}

// stepsAfterRelease: a run released (its answer not final) leaves its
// journal to the next run of the same request, and none to a request of
// another fingerprint.
func stepsAfterRelease(c *checker) {
	ss := c.stepStore()
	k, first := c.key(), token()
	c.want("new key", c.acquire(k, first, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	reserve := []byte(`"reserved"`)
	c.ok("step reserve", c.step(ss, k, first, 1, "reserve", reserve))
	c.ok("Release", c.release(k, first))
	again := token()
	c.want("the same request again", c.acquire(k, again, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.wantSteps("the same request again", ss, k, again, map[string][]byte{"reserve": reserve})
	c.ok("Release again", c.release(k, again))
	other := token()
	c.want("another request", c.acquire(k, other, fpB, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.wantSteps("another request", ss, k, other, map[string][]byte{})
}

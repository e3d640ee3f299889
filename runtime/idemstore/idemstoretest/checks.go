package idemstoretest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// checks are the suite, in the order of package idemstore's state
// machine: each a promise of the contract (idemstore.Store's
// documentation).
var checks = []check{
	{"FirstRun", firstRun},
	{"Replay", replay},
	{"ReplayLargeBinaryBody", replayLargeBody},
	{"BodyOmitted", bodyOmitted},
	{"MismatchInProgress", mismatchInProgress},
	{"MismatchCompleted", mismatchCompleted},
	{"Conflict", conflict},
	{"ExtendPushesTheLease", extendPushes},
	{"Release", release},
	{"NotOwner", notOwner},
	{"CompletedIsFinal", completedIsFinal},
	{"Takeover", takeover},
	{"StaleOwner", staleOwner},
	{"LeaseBoundary", leaseBoundary},
	{"Retention", retention},
	{"ConcurrentAcquire", concurrentAcquire},
	{"ConcurrentTakeover", concurrentTakeover},
	{"ConcurrentReplays", concurrentReplays},
	{"TxCommit", txCommit},
	{"TxRollback", txRollback},
	{"TxStaleCommit", txStaleCommit},
	{"StepJournal", stepJournal},
	{"StepsAfterTakeover", stepsAfterTakeover},
	{"StepsAfterRelease", stepsAfterRelease},
}

// created is the record most checks store: what a 201 leaves.
func created() *idemstore.Record {
	return &idemstore.Record{
		Status: http.StatusCreated,
		Header: http.Header{
			"Content-Type": {"application/json"},
			"Location":     {"/pets/1"},
			"Link":         {"</pets/1/owner>; rel=owner", "</pets/1/tags>; rel=tags"},
		},
		Body: []byte(`{"id":1,"name":"Rex"}`),
	}
}

// firstRun: an absent key is created, owned by the caller, fence 1; keys
// are apart.
func firstRun(c *checker) {
	k1, k2 := c.key(), c.key()
	acq := c.acquire(k1, token(), fpA, time.Minute)
	c.want("new key", acq, idemstore.OutcomeFirstRun, 1)
	if acq.Record != nil {
		c.Errorf("new key: a first run with a record %+v", acq.Record)
	}
	c.want("another new key", c.acquire(k2, token(), fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
}

// replay: a completed key answers its record, status, headers and body, to
// every acquire with its fingerprint.
func replay(c *checker) {
	k := c.completed(created())
	c.wantReplay("again", k, fpA, created())
}

// replayLargeBody: a body of 256 KiB, half random bytes and half zeros,
// comes back byte for byte (a store that compresses must not change it).
func replayLargeBody(c *checker) {
	body := make([]byte, 256<<10)
	_, _ = rand.Read(body[:128<<10])
	c.completed(&idemstore.Record{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: body})
}

// bodyOmitted: a record whose body was over the stored-body limit keeps
// its status and headers and says the body was omitted.
func bodyOmitted(c *checker) {
	c.completed(&idemstore.Record{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, BodyOmitted: true})
}

// completed acquires a new key, completes it with rec, checks that it
// replays rec, and returns the key.
func (c *checker) completed(rec *idemstore.Record) string {
	c.Helper()
	k, owner := c.key(), token()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.ok("Complete by the owner", c.complete(k, owner, rec, time.Hour))
	c.wantReplay("after Complete", k, fpA, rec)
	return k
}

// mismatchInProgress: another fingerprint for a key in progress is a
// mismatch, and the record is untouched: still in progress, still the
// owner's.
func mismatchInProgress(c *checker) {
	k, owner, rec := c.key(), token(), created()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.want("another fingerprint", c.acquire(k, token(), fpB, time.Minute), idemstore.OutcomeMismatch, 0)
	c.want("the first fingerprint again", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	c.ok("Complete by the owner after the mismatch", c.complete(k, owner, rec, time.Hour))
	c.wantReplay("after Complete", k, fpA, rec)
}

// mismatchCompleted: another fingerprint for a completed key is a
// mismatch, and the record is untouched.
func mismatchCompleted(c *checker) {
	k := c.completed(created())
	c.want("another fingerprint", c.acquire(k, token(), fpB, time.Minute), idemstore.OutcomeMismatch, 0)
	c.wantReplay("the first fingerprint again", k, fpA, created())
}

// conflict: the same fingerprint while the lease is live is a conflict
// with the lease's remaining time, at most the lease (and, with Advance,
// less by the time gone).
func conflict(c *checker) {
	const lease = 30 * time.Second
	k := c.key()
	c.want("new key", c.acquire(k, token(), fpA, lease), idemstore.OutcomeFirstRun, 1)
	acq := c.acquire(k, token(), fpA, lease)
	c.want("while the lease is live", acq, idemstore.OutcomeConflict, 0)
	if acq.Remaining > lease {
		c.Errorf("while the lease is live: remaining %v, more than the lease of %v", acq.Remaining, lease)
	}
	if c.h.Advance == nil {
		return
	}
	c.h.Advance(lease / 3)
	acq = c.acquire(k, token(), fpA, lease)
	c.want("a third of the lease later", acq, idemstore.OutcomeConflict, 0)
	if acq.Remaining > lease-lease/3 {
		c.Errorf("a third of the lease later: remaining %v, want at most %v", acq.Remaining, lease-lease/3)
	}
}

// extendPushes: Extend by the owner sets the lease's deadline to now plus
// the lease it is given.
func extendPushes(c *checker) {
	const lease, longer = 10 * time.Second, time.Minute
	k, owner := c.key(), token()
	c.want("new key", c.acquire(k, owner, fpA, lease), idemstore.OutcomeFirstRun, 1)
	c.ok("Extend by the owner", c.extend(k, owner, longer))
	acq := c.acquire(k, token(), fpA, lease)
	c.want("after Extend", acq, idemstore.OutcomeConflict, 0)
	if acq.Remaining <= lease || acq.Remaining > longer {
		c.Errorf("after Extend(%v) of a lease of %v: remaining %v, want more than %v and at most %v", longer, lease, acq.Remaining, lease, longer)
	}
	if c.h.Advance != nil {
		c.h.Advance(2 * lease) // past the first lease, within the extended one
		c.want("past the first lease, within the extended one", c.acquire(k, token(), fpA, lease), idemstore.OutcomeConflict, 0)
	}
}

// release: Release by the owner deletes the lease, so that the next
// acquire runs again.
func release(c *checker) {
	k, owner := c.key(), token()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.ok("Release by the owner", c.release(k, owner))
	c.want("after Release", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
}

// notOwner: Complete, Extend and Release with a token that does not own
// the lease, or on a key that holds nothing, are refused with ErrNotOwner
// and change nothing.
func notOwner(c *checker) {
	k, owner, other, rec := c.key(), token(), token(), created()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.notOwner("Complete by another token", c.complete(k, other, rec, time.Hour))
	c.notOwner("Extend by another token", c.extend(k, other, time.Minute))
	c.notOwner("Release by another token", c.release(k, other))
	c.want("after the refused calls", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	c.ok("Complete by the owner", c.complete(k, owner, rec, time.Hour))
	c.wantReplay("after Complete", k, fpA, rec)

	absent := c.key()
	c.notOwner("Complete of an absent key", c.complete(absent, owner, rec, time.Hour))
	c.notOwner("Extend of an absent key", c.extend(absent, owner, time.Minute))
	c.notOwner("Release of an absent key", c.release(absent, owner))
	c.want("the absent key after the refused calls", c.acquire(absent, token(), fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
}

// completedIsFinal: once completed, a record is not completed again,
// released or extended, even by its owner.
func completedIsFinal(c *checker) {
	k, owner, rec := c.key(), token(), created()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	c.ok("Complete", c.complete(k, owner, rec, time.Hour))
	other := &idemstore.Record{Status: http.StatusAccepted, Body: []byte("other")}
	c.notOwner("Complete again", c.complete(k, owner, other, time.Hour))
	c.notOwner("Release after Complete", c.release(k, owner))
	c.notOwner("Extend after Complete", c.extend(k, owner, time.Minute))
	c.wantReplay("after the refused calls", k, fpA, rec)
}

// takeover: once a lease lapses, the next acquire takes it over with the
// fence one higher, and again.
func takeover(c *checker) {
	lease, k := c.h.Lease, c.key()
	since := time.Now()
	c.want("new key", c.acquire(k, token(), fpA, lease), idemstore.OutcomeFirstRun, 1)
	_, acq := c.takeOver("the first lease lapsed", k, fpA, since, lease, lease)
	c.want("the first lease lapsed", acq, idemstore.OutcomeRecovered, 2)
	_, acq = c.takeOver("the second lease lapsed", k, fpA, time.Now(), lease, time.Minute)
	c.want("the second lease lapsed", acq, idemstore.OutcomeRecovered, 3)
}

// staleOwner: after a takeover, the owner before it is refused on
// Complete, Extend and Release, and the newer owner's record is intact.
func staleOwner(c *checker) {
	lease, k, stale := c.h.Lease, c.key(), token()
	since := time.Now()
	c.want("new key", c.acquire(k, stale, fpA, lease), idemstore.OutcomeFirstRun, 1)
	owner, acq := c.takeOver("the lease lapsed", k, fpA, since, lease, time.Minute)
	c.want("the lease lapsed", acq, idemstore.OutcomeRecovered, 2)
	c.notOwner("Complete by the stale owner", c.complete(k, stale, &idemstore.Record{Status: http.StatusOK, Body: []byte("stale")}, time.Hour))
	c.notOwner("Extend by the stale owner", c.extend(k, stale, time.Minute))
	c.notOwner("Release by the stale owner", c.release(k, stale))
	c.want("after the stale owner's calls", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeConflict, 0)
	c.ok("Extend by the newer owner", c.extend(k, owner, time.Minute))
	rec := created()
	c.ok("Complete by the newer owner", c.complete(k, owner, rec, time.Hour))
	c.wantReplay("after the newer owner's Complete", k, fpA, rec)
}

// leaseBoundary (with Advance): a lease is live until its last moment and
// taken over at it.
func leaseBoundary(c *checker) {
	if c.h.Advance == nil {
		c.Skip("the boundaries need Harness.Advance; Takeover checks that no lease is taken over early")
	}
	lease, k := c.h.Lease, c.key()
	step := max(lease/100, time.Millisecond)
	c.want("new key", c.acquire(k, token(), fpA, lease), idemstore.OutcomeFirstRun, 1)
	c.h.Advance(lease - step)
	acq := c.acquire(k, token(), fpA, lease)
	c.want("just before the lease lapses", acq, idemstore.OutcomeConflict, 0)
	if acq.Remaining > step {
		c.Errorf("just before the lease lapses: remaining %v, want at most %v", acq.Remaining, step)
	}
	c.h.Advance(step)
	c.want("as the lease lapses", c.acquire(k, token(), fpA, lease), idemstore.OutcomeRecovered, 2)
}

// retention: a completed record is replayed for its retention and is gone
// after it: the key then runs again, fence 1.
func retention(c *checker) {
	ret, k, owner, rec := c.h.Lease, c.key(), token(), created()
	c.want("new key", c.acquire(k, owner, fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
	since := time.Now()
	c.ok("Complete", c.complete(k, owner, rec, ret))
	if c.h.Advance != nil {
		step := max(ret/100, time.Millisecond)
		c.h.Advance(ret - step)
		c.wantReplay("just before the retention ends", k, fpA, rec)
		c.h.Advance(step)
		c.want("as the retention ends", c.acquire(k, token(), fpA, time.Minute), idemstore.OutcomeFirstRun, 1)
		return
	}
	c.want("after the retention", c.waitGone("retention", k, fpA, since, ret), idemstore.OutcomeFirstRun, 1)
}

// racers is how many goroutines the concurrent checks run.
const racers = 32

// concurrentAcquire: of many acquires of one new key at once, exactly one
// is the first run; the others are conflicts.
func concurrentAcquire(c *checker) {
	k := c.key()
	s := c.s()
	outcomes := race(c, func() (idemstore.Acquisition, error) {
		ctx, cancel := c.ctx()
		defer cancel()
		return s.Acquire(ctx, idemstore.AcquireRequest{Key: k, Token: token(), Fingerprint: fpA, Lease: time.Minute})
	})
	if outcomes["first run"] != 1 || outcomes["conflict"] != racers-1 {
		c.Errorf("%d acquires of one new key at once: %v, want 1 first run and %d conflicts", racers, outcomes, racers-1)
	}
}

// concurrentTakeover: of many acquires of one lapsed lease at once,
// exactly one takes it over (fence 2); the others are conflicts with the
// new lease.
func concurrentTakeover(c *checker) {
	lease, k := c.h.Lease, c.key()
	s := c.s()
	since := time.Now()
	c.want("new key", c.acquire(k, token(), fpA, lease), idemstore.OutcomeFirstRun, 1)
	if c.h.Advance != nil {
		c.h.Advance(lease)
	}
	var fence atomic.Int64
	newLease := lease + time.Minute // tells the new owner's conflicts from the old
	outcomes := race(c, func() (idemstore.Acquisition, error) {
		for {
			ctx, cancel := c.ctx()
			acq, err := s.Acquire(ctx, idemstore.AcquireRequest{Key: k, Token: token(), Fingerprint: fpA, Lease: newLease})
			cancel()
			switch {
			case err != nil:
				return acq, err
			case acq.Outcome == idemstore.OutcomeRecovered:
				fence.Store(acq.Fence)
			case acq.Outcome == idemstore.OutcomeConflict && acq.Remaining <= lease && time.Since(since) < lease+c.h.Timeout:
				time.Sleep(acq.Remaining + time.Millisecond) // the old lease: wait for it
				continue
			}
			return acq, nil
		}
	})
	if outcomes["recovered"] != 1 || outcomes["conflict"] != racers-1 {
		c.Errorf("%d acquires of one lapsed lease at once: %v, want 1 takeover and %d conflicts", racers, outcomes, racers-1)
	}
	if f := fence.Load(); f != 2 {
		c.Errorf("the takeover's fence: %d, want 2", f)
	}
}

// concurrentReplays: many acquires of many completed keys at once each
// answer their own key's record (a store that shares or batches the reads
// of concurrent acquires keeps them apart); half of them through
// AcquireRun, for a TxStore.
func concurrentReplays(c *checker) {
	const keys = 16
	ks, recs := make([]string, keys), make([]*idemstore.Record, keys)
	for i := range keys {
		recs[i] = created()
		recs[i].Header.Set("Location", fmt.Sprintf("/pets/%d", i))
		recs[i].Body = fmt.Appendf(nil, `{"id":%d}`, i)
		ks[i] = c.completed(recs[i])
	}
	s := c.s()
	ts, _ := s.(idemstore.TxStore)
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	for g := range racers {
		wg.Go(func() {
			for j := range keys {
				i := (g + j) % keys
				ctx, cancel := c.ctx()
				req := idemstore.AcquireRequest{Key: ks[i], Token: token(), Fingerprint: fpA, Lease: time.Minute}
				var acq idemstore.Acquisition
				var err error
				if ts != nil && g%2 == 1 {
					var tx idemstore.RunTx
					if acq, tx, err = ts.AcquireRun(ctx, req); tx != nil {
						_ = tx.Rollback(ctx)
						err = fmt.Errorf("a transaction with a %s", outcomeName(acq.Outcome))
					}
				} else {
					acq, err = s.Acquire(ctx, req)
				}
				cancel()
				switch {
				case err != nil:
					fail("key %d: %v", i, err)
				case acq.Outcome != idemstore.OutcomeReplay:
					fail("key %d: %s, want a replay", i, outcomeName(acq.Outcome))
				default:
					if d := recordDiff(acq.Record, recs[i]); d != "" {
						fail("key %d replayed another record: %s", i, d)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, e := range errs[:min(len(errs), 5)] {
		c.Errorf("%d acquires of %d answered keys at once: %s", racers*keys, keys, e)
	}
	if len(errs) > 5 {
		c.Errorf("... and %d more", len(errs)-5)
	}
}

// race runs acquire on racers goroutines at once and counts the outcomes
// by name; an error is reported.
func race(c *checker, acquire func() (idemstore.Acquisition, error)) map[string]int {
	c.Helper()
	var (
		mu       sync.Mutex
		outcomes = map[string]int{}
		errs     []error
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			acq, err := acquire()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			outcomes[outcomeName(acq.Outcome)]++
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		c.Errorf("Acquire: %v", err)
	}
	return outcomes
}

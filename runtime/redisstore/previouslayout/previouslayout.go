// Package previouslayout is the rolling upgrade from the previous layout of
// record keys, for a Redis that processes of a version before it served
// (records under the API's and operation's full names, fingerprints
// without the API identity). A new deployment does not need it: a
// [redisstore.Store] of its own writes the current layout alone from its
// first request. Once the upgrade's window is over this package is no
// longer needed, and a deployment goes back to redisstore.New.
//
// [New] returns a [redisstore.Store] wrapped so that each process of either
// version finds every record the other wrote:
//
//   - For [Rollout] (24 h) from when the first process of this version
//     used the server (the [KeyLayoutMarker]), every record is written
//     under both keys: under the current key as this version reads it, and
//     under the previous key as the previous version does (the fingerprint
//     it computes, a record without the body's size). One owner holds both
//     leases, and completes, extends and releases both. Both completions
//     are acknowledged by replicas as the store acknowledges any, each on
//     the master that holds it (on a Cluster the two keys may live on
//     different masters): a result the previous version reads is answered
//     plain 2xx only once it survives the loss of its master.
//   - After the rollout, for the retention more, the previous version is
//     gone but its records may live: a record created at the current key
//     defers to one at the previous key (replayed, refused, answered 409,
//     or taken over when its lease lapsed).
//   - In both, a record at the current key that holds the request's
//     fingerprint without the API identity (written by a version between
//     the two) is the request's too.
//
// Fences only grow across the two keys: a run that holds both has the
// higher of their fences, and both keys are raised to it. Past the window
// the store is a plain redisstore.Store, one key per record, one
// fingerprint.
package previouslayout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// Rollout is how long processes of the previous key layout are taken to go
// on writing records after the first process of the current one used the
// server: a rolling upgrade that takes longer leaves records that a retry
// on a new process does not find.
const Rollout = 24 * time.Hour

// KeyLayoutMarker is the key, under the store's prefix, of the time the
// current record layout started on the server: Unix ms as a decimal
// string, which the first process of this version writes (the server's
// time). An operator who knows that no process of a previous version runs,
// and that none ran within the retention, can SET it to 0 to end the
// window now (processes read it when they start). Any other value is a
// misconfiguration that every acquire reports (503 store-misconfigured). A
// store built with redisstore.New refuses the server while the window is
// open ([redisstore.KeyLayout]). It has no ':' after the prefix, so it is
// never a record's key of either layout.
const KeyLayoutMarker = redisstore.KeyLayoutMarker

// layoutScript reads the marker, writing the server's time first when it is
// absent. It returns the marker's value and the server's time in ms.
var layoutScript = redis.NewScript(`
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local v = redis.call('GET', KEYS[1])
if not v then
  v = now
  redis.call('SET', KEYS[1], v)
end
return {v, now}
`)

// retentionScript raises the retention at KEYS[1]
// (redisstore.KeyLayoutRetention) to ARGV[1], in ms, when it is shorter or
// absent, so that it holds the longest of every process's: a store built
// without this package reads it to refuse the server until the window
// ends.
var retentionScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if cur < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1
`)

// Store is a [redisstore.Store] that also finds and writes the records of
// the previous key layout while the upgrade's window lasts. Every method
// but the four transitions is the wrapped store's.
type Store struct {
	*redisstore.Store                   // the current layout
	prev              *redisstore.Store // the same server, writing records as the previous version reads them
	rdb               redis.Scripter
	retention         time.Duration
	since             atomic.Int64 // the marker's time (Unix ms), 0: none, -1: not read yet
	pairs             sync.Map     // owner token -> previous key, for leases of both keys of a record
}

var _ idemstore.Store = (*Store)(nil)

// New returns a store on rdb configured by opts, as redisstore.New(rdb,
// opts...), that also serves the records of the previous key layout until
// the marker's time plus [Rollout] plus retention: the longest retention of
// the operations it serves (0 means [idemstore.DefaultRetention]). Every
// process of the new version that shares the Redis with processes of the
// previous one, or with records they wrote, needs it.
func New(rdb redis.Scripter, retention time.Duration, opts ...redisstore.Option) *Store {
	if retention <= 0 {
		retention = idemstore.DefaultRetention
	}
	s := &Store{
		Store:     redisstore.New(rdb, append(opts[:len(opts):len(opts)], redisstore.WithPreviousLayoutIgnored())...),
		prev:      redisstore.New(rdb, append(opts[:len(opts):len(opts)], redisstore.WithPreviousLayoutIgnored(), redisstore.WithUnsizedRecords(), redisstore.WithLogger(nil))...),
		rdb:       rdb,
		retention: retention,
	}
	s.since.Store(-1)
	return s
}

// KeyLayoutSince returns when the first process of the current key layout
// used the store's server, the zero time when an operator set the marker to
// 0; known is false until the store has read the marker (at its first
// acquire).
func (s *Store) KeyLayoutSince() (since time.Time, known bool) {
	switch ms := s.since.Load(); {
	case ms < 0:
		return time.Time{}, false
	case ms == 0:
		return time.Time{}, true
	default:
		return time.UnixMilli(ms), true
	}
}

// phase reads the marker the first time, and reports whether the rollout
// lasts (pair: records are written under both keys) and whether the window
// does (records of the previous layout are read).
func (s *Store) phase(ctx context.Context) (pair, window bool, err error) {
	ms := s.since.Load()
	if ms < 0 {
		if ms, err = s.readMarker(ctx); err != nil {
			return false, false, err
		}
	}
	if ms == 0 {
		return false, false, nil
	}
	age := time.Since(time.UnixMilli(ms))
	return age < Rollout, age < Rollout+s.retention, nil
}

// readMarker reads (or writes) the layout marker. A malformed one is an
// error matching [idemstore.ErrStoreMisconfigured], read again at the next
// acquire.
func (s *Store) readMarker(ctx context.Context) (int64, error) {
	key := s.StorageKey(KeyLayoutMarker)
	v, err := layoutScript.Run(ctx, s.rdb, []string{key}).StringSlice()
	switch {
	case err != nil:
		return 0, &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("read the key layout marker: %w", err)}
	case len(v) != 2:
		return 0, &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("read the key layout marker: malformed reply %q", v)}
	}
	// A day ahead of this server's clock at most: the first process may
	// have read another node's (Cluster, Ring).
	now, _ := strconv.ParseInt(v[1], 10, 64)
	ms, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || ms < 0 || ms > now+Rollout.Milliseconds() {
		return 0, &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("%w: the key layout marker %s holds %q, which is neither 0 nor a Unix time in ms at most a day ahead of the server's clock (%d): "+
			"DEL it to start the upgrade's window now, or SET it to 0 if no process of a previous version has run within the retention", idemstore.ErrStoreMisconfigured, key, v[0], now)}
	}
	if ms > 0 {
		if err := retentionScript.Run(ctx, s.rdb, []string{s.StorageKey(redisstore.KeyLayoutRetention)}, s.retention.Milliseconds()).Err(); err != nil {
			return 0, &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("record the retention of the key layout window: %w", err)}
		}
	}
	s.since.Store(ms)
	return ms, nil
}

// owns reports whether acq gives its caller the lease.
func owns(acq idemstore.Acquisition) bool {
	return acq.Outcome == idemstore.OutcomeFirstRun || acq.Outcome == idemstore.OutcomeRecovered
}

// Acquire implements [idemstore.Store]: the wrapped store's, and while the
// window lasts, the record's previous key too (req.Origin names it).
func (s *Store) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	if req.Origin == nil {
		return s.Store.Acquire(ctx, req)
	}
	pair, window, err := s.phase(ctx)
	switch {
	case err != nil:
		return idemstore.Acquisition{}, err
	case !window:
		return s.Store.Acquire(ctx, req)
	}
	acq, err := s.acquireCurrent(ctx, req)
	switch {
	case err != nil || !owns(acq):
		return acq, err // an answer of the current key decides
	case !pair && acq.Outcome != idemstore.OutcomeFirstRun:
		return acq, nil // after the rollout, a record taken over there lives there
	}
	o := req.Origin
	prevKey := PreviousRecordKey(o.API, o.Operation, o.Scope, o.Key)
	if !pair {
		absent, err := s.absent(ctx, prevKey)
		if err != nil || absent {
			if err != nil {
				s.abandon(ctx, req.Key, "", req.Token)
				return idemstore.Acquisition{}, err
			}
			return acq, nil
		}
	}
	return s.acquirePrevious(ctx, req, acq, prevKey, pair)
}

// acquireCurrent acquires the record at the current key. A record there
// that holds the request's fingerprint without the API identity (written
// by a version between the layouts) is the request's too.
func (s *Store) acquireCurrent(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	acq, err := s.Store.Acquire(ctx, req)
	before := req
	before.Fingerprint = req.Origin.Request
	if err != nil || acq.Outcome != idemstore.OutcomeMismatch || before.Fingerprint == "" || before.Fingerprint == req.Fingerprint {
		return acq, err
	}
	acq, err = s.Store.Acquire(ctx, before)
	if err != nil || acq.Outcome != idemstore.OutcomeFirstRun {
		return acq, err
	}
	// The other record went in between, and this one holds the
	// fingerprint without the API identity: created anew, with the
	// request's.
	if err := s.Store.Release(ctx, req.Key, req.Token); err != nil {
		return idemstore.Acquisition{}, err
	}
	return s.Store.Acquire(ctx, req)
}

// acquirePrevious acquires the record's previous key prevKey for the owner
// of its current key (acq). An answer there (replay, mismatch, conflict)
// or a failure gives the current key up. Otherwise the run holds both
// keys under the higher of their fences, raised to it in each; after the
// rollout (not pair) the previous key is then released, its record living
// on under the current key.
func (s *Store) acquirePrevious(ctx context.Context, req idemstore.AcquireRequest, acq idemstore.Acquisition, prevKey string, pair bool) (idemstore.Acquisition, error) {
	o := req.Origin
	pacq, err := s.prev.Acquire(ctx, idemstore.AcquireRequest{Key: prevKey, Token: req.Token, Fingerprint: o.Request, Lease: req.Lease})
	if err != nil || !owns(pacq) {
		s.abandon(ctx, req.Key, "", req.Token)
		return pacq, err
	}
	run := idemstore.Acquisition{Outcome: acq.Outcome, Fence: max(acq.Fence, pacq.Fence)}
	if pacq.Outcome == idemstore.OutcomeRecovered {
		run.Outcome = idemstore.OutcomeRecovered
	}
	held := prevKey // the previous key, while the run holds it
	switch {
	case !pair:
		held = ""
		err = s.prev.Release(ctx, prevKey, req.Token)
		if errors.Is(err, idemstore.ErrNotOwner) {
			err = nil
		}
	case pacq.Fence < run.Fence:
		err = s.prev.ExtendFence(ctx, prevKey, req.Token, req.Lease, run.Fence)
	}
	if err == nil && acq.Fence < run.Fence {
		err = s.Store.ExtendFence(ctx, req.Key, req.Token, req.Lease, run.Fence)
	}
	if err != nil {
		s.abandon(ctx, req.Key, held, req.Token)
		return idemstore.Acquisition{}, err
	}
	if held != "" {
		s.pairs.Store(req.Token, held)
	}
	return run, nil
}

// absent reports whether nothing is stored at the previous key prevKey.
// With a client that only runs scripts it cannot tell: false.
func (s *Store) absent(ctx context.Context, prevKey string) (bool, error) {
	c, ok := s.rdb.(redis.Cmdable)
	if !ok {
		return false, nil
	}
	n, err := c.Exists(ctx, s.StorageKey(prevKey)).Result()
	if err != nil {
		return false, &idemstore.StoreError{Op: "acquire", Err: err}
	}
	return n == 0, nil
}

// abandon releases the leases token holds of key and prevKey ("": none)
// when an acquire ends without them; a failure leaves them to lapse.
func (s *Store) abandon(ctx context.Context, key, prevKey, token string) {
	_ = s.Store.Release(ctx, key, token)
	if prevKey != "" {
		_ = s.prev.Release(ctx, prevKey, token)
	}
}

// pair returns the previous key of the lease owned by token, if it holds
// both keys of its record (the rollout).
func (s *Store) pair(token string) (string, bool) {
	v, ok := s.pairs.Load(token)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// Complete implements [idemstore.Store]. A lease of both keys completes
// the previous key first, as the previous version reads it: a failure
// leaves the lease of both for the engine's next attempt, which finds the
// previous key completed (not its owner's any more) and goes on. The
// completion of either key that no replica acknowledged makes the whole
// one unacknowledged ([idemstore.ErrUnreplicated]).
func (s *Store) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	prevKey, paired := s.pair(token)
	if !paired {
		return s.Store.Complete(ctx, key, token, rec, retention)
	}
	perr := s.prev.Complete(ctx, prevKey, token, rec, retention)
	if perr != nil && !errors.Is(perr, idemstore.ErrNotOwner) && !errors.Is(perr, idemstore.ErrUnreplicated) {
		return perr
	}
	err := s.Store.Complete(ctx, key, token, rec, retention)
	if err == nil || errors.Is(err, idemstore.ErrNotOwner) || errors.Is(err, idemstore.ErrUnreplicated) {
		s.pairs.Delete(token)
	}
	if err == nil && errors.Is(perr, idemstore.ErrUnreplicated) {
		return perr
	}
	return err
}

// Release implements [idemstore.Store].
func (s *Store) Release(ctx context.Context, key, token string) error {
	if prevKey, paired := s.pair(token); paired {
		if err := s.prev.Release(ctx, prevKey, token); err != nil && !errors.Is(err, idemstore.ErrNotOwner) {
			return err
		}
		s.pairs.Delete(token)
	}
	return s.Store.Release(ctx, key, token)
}

// Extend implements [idemstore.Store].
func (s *Store) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	err := s.Store.Extend(ctx, key, token, lease)
	if prevKey, paired := s.pair(token); paired && err == nil {
		if err := s.prev.Extend(ctx, prevKey, token, lease); err != nil && !errors.Is(err, idemstore.ErrNotOwner) {
			return err
		}
	}
	return err
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Operators' scripts. A redis.Script holds only its source and hash, so
// these are shared by every Store, and loaded on first use (EVAL after
// NOSCRIPT) rather than by LoadScripts: they run rarely.
var (
	inspectScript = redis.NewScript(lua.Inspect)
	forgetScript  = redis.NewScript(lua.Forget)
)

// ErrNoRecord is returned by [Store.Inspect] and [Store.Forget] when the key
// holds no record.
var ErrNoRecord = errors.New("redisstore: no record for this key")

// ErrInProgress is returned by [Store.Forget] for an in-progress record when
// it is not forced. Forcing it is a risk: the handler that owns the lease
// may still be running, and a retry after the record is gone runs the
// operation a second time beside it. The stale owner cannot overwrite the
// newer run's record (its complete is refused, as its token no longer owns
// the key), but whatever it does outside the store still happens. Force
// only once the original is known to be dead, or after its lease has
// lapsed (RecordInfo.LeaseRemaining <= 0), when the next retry would take
// the record over anyway.
var ErrInProgress = errors.New("redisstore: the record is in progress: its handler may still be running")

// State is the state of a stored record.
type State string

// The states of a record.
const (
	StateInProgress State = "in progress" // a handler owns the lease, or did until it lapsed
	StateCompleted  State = "completed"   // a result is stored and replayed
)

// RecordInfo describes one stored record, as [Store.Inspect] reads it,
// without its owner token or fingerprint.
type RecordInfo struct {
	RedisKey string        // the Redis key, with the store's prefix
	State    State         // in progress or completed
	TTL      time.Duration // until Redis deletes the record; < 0 if it never expires (not a record the store wrote)
	Format   int           // 3: the compact record with its body's length, which this version writes; 2: the compact record without (of the versions before, and under a previous key during a rollout); 1: the text record of the versions before

	// In progress.
	Fence          int64         // fencing token of the current owner (1, +1 on each takeover)
	Owner          bool          // an owner token is present (it is never shown)
	LeaseRemaining time.Duration // lease left; <= 0: lapsed, the next acquire takes it over
	Abandoned      time.Duration // how long the record outlives its lease

	// Completed.
	Status      int      // HTTP status of the stored response
	HeaderNames []string // names of the stored headers, sorted
	BodySize    int      // bytes stored for the body (after compression)
	BodyOmitted bool     // the body was over the stored-body limit and not kept
	Compressed  bool     // the stored body is gzip-compressed

	body []byte // the decoded body, returned by Body
}

// Body returns the stored response body, decompressed; nil for an
// in-progress record or an omitted body. It is kept apart from the other
// fields so that printing a RecordInfo never shows it.
func (r RecordInfo) Body() []byte { return r.body }

// Age estimates how long ago the record was written, from its TTL and the
// operation's settings (which the record does not keep): for a completed
// record, retention - TTL is the time since completion; for one in
// progress, lock - LeaseRemaining is the time since the lease was last
// acquired or extended by the heartbeat. Zero settings mean the defaults.
func (r RecordInfo) Age(retention, lock time.Duration) time.Duration {
	if retention == 0 {
		retention = idemstore.DefaultRetention
	}
	if lock == 0 {
		lock = idemstore.DefaultLease
	}
	if r.State == StateInProgress {
		return lock - r.LeaseRemaining
	}
	return retention - r.TTL
}

// Inspect reads the record of key (the engine's key, [idemstore.RecordKey],
// without the store's prefix) in one atomic step. It returns [ErrNoRecord]
// when there is none. The owner token and the fingerprint are not
// returned; the body only through RecordInfo.Body.
func (s *Store) Inspect(ctx context.Context, key string) (RecordInfo, error) {
	if key == "" {
		return RecordInfo{}, errors.New("idem: empty storage key")
	}
	info := RecordInfo{RedisKey: s.storageKey(key)}
	v, err := inspectScript.Run(ctx, s.rdb, []string{info.RedisKey}).Slice()
	if err != nil {
		return RecordInfo{}, &idemstore.StoreError{Op: "inspect", Err: err}
	}
	if len(v) == 0 {
		return RecordInfo{}, ErrNoRecord
	}
	var raw string
	var pttl int64
	ok := len(v) == 2
	if ok {
		raw, ok = v[0].(string)
	}
	if ok {
		pttl, ok = v[1].(int64)
	}
	if !ok {
		return RecordInfo{}, &idemstore.StoreError{Op: "inspect", Err: fmt.Errorf("malformed reply %v", v)}
	}
	rec, err := parseRecord(raw)
	if err != nil {
		return RecordInfo{}, &idemstore.StoreError{Op: "inspect", Err: fmt.Errorf("not a record: %w", err)}
	}
	info.TTL, info.Format = time.Duration(pttl)*time.Millisecond, rec.format
	if rec.state == stateInProgress {
		info.State, info.Fence, info.Owner = StateInProgress, rec.fence, rec.owner != ""
		info.Abandoned = time.Duration(rec.abandoned) * time.Millisecond
		info.LeaseRemaining = info.TTL - info.Abandoned
		return info, nil
	}
	info.State, info.Status = StateCompleted, rec.result.Status
	for name := range rec.result.Header {
		info.HeaderNames = append(info.HeaderNames, name)
	}
	slices.Sort(info.HeaderNames)
	info.BodySize, info.BodyOmitted = rec.storedBody, rec.result.BodyOmitted
	info.Compressed, info.body = rec.flags&flagGzip != 0, rec.result.Body
	return info, nil
}

// Forget deletes the record of key (the engine's key, [idemstore.RecordKey],
// without the store's prefix) and its step journal, so that the next
// request with its key runs the operation again, every step included. A
// key whose run failed has no record but may have a journal (kept for a
// retry to resume from): Forget deletes it, which unblocks a request whose
// step is read as another type than it was journaled as
// (idem.StepTypeError). It returns [ErrNoRecord] when there is neither,
// and refuses an in-progress record with [ErrInProgress] unless force is
// set, keeping its journal; that error says what forcing risks.
func (s *Store) Forget(ctx context.Context, key string, force bool) error {
	if key == "" {
		return errors.New("idem: empty storage key")
	}
	arg := ""
	if force {
		arg = "force"
	}
	skey := s.storageKey(key)
	n, err := forgetScript.Run(ctx, s.rdb, []string{skey, journalKey(s.prefix, key, skey)}, arg).Int64()
	switch {
	case err != nil:
		return &idemstore.StoreError{Op: "forget", Err: err}
	case n >= 1 && n <= 3:
		return nil
	case n == 0:
		return ErrNoRecord
	case n == -1:
		return ErrInProgress
	}
	return &idemstore.StoreError{Op: "forget", Err: fmt.Errorf("malformed reply %d", n)}
}

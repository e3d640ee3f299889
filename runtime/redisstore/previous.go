package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Records were kept under the full names of their API and operation before
// the current key layout ([idemstore.PreviousRecordKey]); they are kept under a
// short token of both now ([idemstore.OperationToken]). So that a retry of a
// request answered before the upgrade is still replayed, the store looks
// for a record under the previous key whenever it creates one under the
// current key (one more GET in Acquire's pipeline), for as long as such a
// record may live. It learns when that is from a marker key that the first
// process of the current layout writes to the server: the time it started,
// or 0 when the server held no key at all then (a new Redis can hold no
// previous record, so nothing is looked up). The engine adds the rollout
// and the operation's retention to that time ([idemstore.PreviousKeyStore]).

var (
	_ idemstore.PreviousKeyStore = (*Store)(nil)
	_ idemstore.OperationNamer   = (*Store)(nil)
)

// KeyLayoutMarker is the key, under the prefix, of the time the current
// key layout started on the server (Unix ms as a decimal string), or 0 when
// the server held nothing then: the store looks up previous keys only while
// records written under them may live ([idemstore.PreviousKeyStore]). An
// operator who knows that no process of the previous layout ran can SET it
// to 0 to end the lookups (processes read it when they start). It has no
// ':' after the prefix, so it is never a record's key of either layout.
const KeyLayoutMarker = "key-layout-3"

// operationNames is the hash, under the prefix, from operation token to
// the API identity and operation ID behind it ("api\nop"), which idemctl
// reads to name the records it lists.
const operationNames = "operations"

// layoutScript reads the marker, writing it first when it is absent: the
// server's time, or 0 when ARGV[1] is "1" and the server holds no key.
// It returns the marker's value.
var layoutScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  return tonumber(v)
end
local since = 0
if ARGV[1] ~= '1' or redis.call('DBSIZE') > 0 then
  local t = redis.call('TIME')
  since = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
redis.call('SET', KEYS[1], string.format('%d', since))
return since
`)

// KeyLayoutSince implements [idemstore.PreviousKeyStore].
func (s *Store) KeyLayoutSince() (since time.Time, known bool) {
	switch ms := s.layoutSince.Load(); {
	case ms < 0:
		return time.Time{}, false
	case ms == 0:
		return time.Time{}, true
	default:
		return time.UnixMilli(ms), true
	}
}

// readLayout reads (or writes) the layout marker once, after the store's
// first successful verification. Only a single server's emptiness counts:
// a key count of one Cluster or Ring node says nothing of the others.
func (s *Store) readLayout(ctx context.Context) error {
	if s.layoutSince.Load() >= 0 {
		return nil
	}
	single := "0"
	if _, ok := s.rdb.(*redis.Client); ok {
		single = "1"
	}
	ms, err := layoutScript.Run(ctx, s.rdb, []string{s.storageKey(KeyLayoutMarker)}, single).Int64()
	if err != nil {
		return fmt.Errorf("read the key layout marker: %w", err)
	}
	s.layoutSince.Store(max(ms, 0))
	return nil
}

// NameOperation implements [idemstore.OperationNamer]: HSET of the token in the
// prefix's operations hash.
func (s *Store) NameOperation(ctx context.Context, token, api, op string) error {
	c, ok := s.rdb.(redis.Cmdable)
	if !ok {
		return nil // a client that only runs scripts keeps no names
	}
	if err := c.HSet(ctx, s.storageKey(operationNames), token, api+"\n"+op).Err(); err != nil {
		return &idemstore.StoreError{Op: "name operation", Err: err}
	}
	return nil
}

// OperationNames returns the names behind the operation tokens of the
// store's keys, token to API identity and operation ID, as the engines
// that wrote them named them ([Store.NameOperation]).
func OperationNames(ctx context.Context, rdb redis.Cmdable, prefix string) (map[string][2]string, error) {
	key := operationNames
	if prefix != "" {
		key = prefix + ":" + key
	}
	m, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string][2]string, len(m))
	for token, v := range m {
		if api, op, ok := strings.Cut(v, "\n"); ok {
			out[token] = [2]string{api, op}
		}
	}
	return out, nil
}

// created decides an acquire that created the record at key, owned by
// req.Token, from v and err, its read of the previous key prevKey: nothing
// there leaves the creation as it is (FirstRun, fence 1); a record there
// decides (fromPrevious); a failed read releases the new record.
func (s *Store) created(ctx context.Context, key, prevKey, v string, err error, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, error) {
	switch {
	case err == redis.Nil:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, nil
	case err != nil:
		return idemstore.Acquisition{}, s.abandon(ctx, key, req.Token, s.denied("acquire", err))
	default:
		return s.fromPrevious(ctx, key, prevKey, v, req, lease)
	}
}

// abandon releases the record an acquire created at key, owned by token,
// when the acquire fails after all, and returns err.
func (s *Store) abandon(ctx context.Context, key, token string, err error) error {
	_ = s.run(ctx, "release", s.release, key, token)
	return err
}

// fromPrevious decides an acquire that created the record at key (owned by
// req.Token, fence 1) from prev, the record found at the previous key
// prevKey: the new record is released and the answer is the previous
// record's (replay, mismatch, or conflict while its lease lives); a lapsed
// previous lease is taken over and deleted, and the new record kept. A
// value that is not a record is none.
func (s *Store) fromPrevious(ctx context.Context, key, prevKey, prev string, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, error) {
	state, stored, format := recordHead(prev)
	fp := storedFingerprint(req.Fingerprint)
	if format == 1 {
		fp = req.Fingerprint
	}
	var acq idemstore.Acquisition
	switch {
	case format == 0:
		return idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}, nil
	case stored != fp:
		acq = idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}
	case state == stateCompleted:
		r, err := parseRecord(prev)
		if err != nil {
			return idemstore.Acquisition{}, s.abandon(ctx, key, req.Token, &idemstore.StoreError{Op: "acquire", Err: fmt.Errorf("%w: replay of the previous key: %v", errMalformedReply, err)})
		}
		acq = idemstore.Acquisition{Outcome: idemstore.OutcomeReplay, Record: r.result}
	default: // in progress: live or lapsed, by its TTL, as acquire.lua decides
		v, err := s.acquire.Run(ctx, s.rdb, []string{prevKey}, req.Token, fp, lease+s.abandonedMS, s.abandonedMS, req.Fingerprint).Result()
		if err != nil {
			return idemstore.Acquisition{}, s.abandon(ctx, key, req.Token, s.denied("acquire", err))
		}
		if acq, err = decodeAcquireReply(v); err != nil {
			return idemstore.Acquisition{}, s.abandon(ctx, key, req.Token, &idemstore.StoreError{Op: "acquire", Err: err})
		}
		switch acq.Outcome {
		case idemstore.OutcomeRecovered, idemstore.OutcomeFirstRun:
			// Taken over from a lapsed owner (or gone meanwhile, and
			// created there by the script): the run goes on under key.
			if err := s.run(ctx, "acquire", s.release, prevKey, req.Token); err != nil && !errors.Is(err, idemstore.ErrNotOwner) {
				return idemstore.Acquisition{}, s.abandon(ctx, key, req.Token, err)
			}
			return idemstore.Acquisition{Outcome: acq.Outcome, Fence: 1}, nil
		}
	}
	if err := s.run(ctx, "acquire", s.release, key, req.Token); err != nil && !errors.Is(err, idemstore.ErrNotOwner) {
		return idemstore.Acquisition{}, err
	}
	return acq, nil
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Records were kept under the full names of their API and operation before
// the current key layout ([idemstore.PreviousRecordKey]); they are kept under a
// short token of both now ([idemstore.OperationToken]), and their fingerprint
// covers the API identity ([idemstore.AcquireRequest.PreviousFingerprint] is
// the one before). During a rolling upgrade processes of both versions
// serve one Redis, and each must find every record the other wrote:
//
//   - For [idemstore.PreviousLayoutRollout] (24 h) from when the first process of
//     this version checked the server (the marker below), the store writes
//     every record under both keys: under the current key as this version
//     reads it, and under the previous key as the previous version does
//     (the fingerprint it computes, a result it decodes). One owner holds
//     both leases and completes, extends and releases both. An acquire
//     reads both keys in its pipeline and answers from either.
//   - After the rollout, for the operation's retention more (the engine's
//     window, [idemstore.PreviousKeyStore]), the previous version is gone but
//     its records may live: a record created at the current key defers to
//     one at the previous key, as before.
//
// Fences only grow across the two keys: a creation or takeover that finds
// a lease under either key gets a fence above both (acquire.lua's least
// fence), and the keys an owner holds are raised to the fence of its run.
// The marker is never 0 unless an operator sets it: a server that is empty
// when the first process of this version starts may still get records
// from processes of the previous one during the rollout.

var (
	_ idemstore.PreviousKeyStore = (*Store)(nil)
	_ idemstore.OperationNamer   = (*Store)(nil)
)

// KeyLayoutMarker is the key, under the prefix, of the time the current
// record layout started on the server: Unix ms as a decimal string, which
// the first process of this version writes (the server's time). An
// operator who knows that no process of a previous version runs, and that
// none ran within the retention, can SET it to 0 to end the rollout's
// double writes and the lookups of previous keys (processes read it when
// they start). Any other value is a misconfiguration that [Store.Check]
// and every acquire report (503 store-misconfigured). It has no ':' after
// the prefix, so it is never a record's key of either layout.
const KeyLayoutMarker = "key-layout-4"

// operationNames is the hash, under the prefix, from operation token to
// the API identity and operation ID behind it ("api\nop"), which idemctl
// reads to name the records it lists.
const operationNames = "operations"

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

// WithoutPreviousLayout declares that no process of a version before the
// current key layout (records under the API's and operation's full names)
// serves this Redis, and that none did within the operations' retention:
// a new deployment, or an upgrade that is over. The store then neither
// writes records under both layouts nor looks for records under the
// previous one, from its first request on, whatever [KeyLayoutMarker]
// holds (it does not read or write the marker). Without it, the first
// [idemstore.PreviousLayoutRollout] of a server under this version pays the
// rollout: a second key per record, one more round trip per first request,
// and on a Cluster a lookup that may go to another master. Setting the
// marker to 0 says the same to every process that starts afterwards.
func WithoutPreviousLayout() Option {
	return func(s *Store) { s.layoutSince.Store(0) }
}

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

// rollout reports whether processes of the previous version may still write
// records: the rollout after the marker's time, or the marker unread.
func (s *Store) rollout() bool {
	ms := s.layoutSince.Load()
	return ms < 0 || ms > 0 && time.Since(time.UnixMilli(ms)) < idemstore.PreviousLayoutRollout
}

// readLayout reads (or writes) the layout marker once, after the store's
// first successful verification. It returns what is wrong with the marker
// ("" if nothing) or the failure to read it.
func (s *Store) readLayout(ctx context.Context) (string, error) {
	if s.layoutSince.Load() >= 0 {
		return "", nil
	}
	key := s.storageKey(KeyLayoutMarker)
	v, err := layoutScript.Run(ctx, s.rdb, []string{key}).StringSlice()
	switch {
	case err != nil:
		return "", fmt.Errorf("read the key layout marker: %w", err)
	case len(v) != 2:
		return "", fmt.Errorf("read the key layout marker: malformed reply %q", v)
	}
	// A day ahead of this server's clock at most: the first process may
	// have read another node's (Cluster, Ring).
	now, _ := strconv.ParseInt(v[1], 10, 64)
	ms, err := parseDecimal(v[0], 0, now+idemstore.PreviousLayoutRollout.Milliseconds())
	if err != nil {
		return fmt.Sprintf("the key layout marker %s holds %q, which is neither 0 nor a Unix time in ms at most a day ahead of the server's clock (%v): "+
			"DEL it to start the upgrade's window now, or SET it to 0 if no process of a previous version has run within the retention", key, v[0], err), nil
	}
	s.layoutSince.Store(ms)
	return "", nil
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

// keyResult is what acquiring one key of a record gave: a lease of it
// (owned, with its fence) or an answer (replay, mismatch, conflict).
type keyResult struct {
	key       string
	owned     bool
	recovered bool // owned by taking over a lapsed lease
	fence     int64
	acq       idemstore.Acquisition // when not owned
}

// acquireTwo acquires a record that may also live under its previous key,
// prevKey. Both keys are read in one pipeline. With pair (the rollout), an
// absent record is created under both keys, so that a process of the
// previous version finds it, and the lease is of both keys. Without, the
// previous key is read only when the record was created at the current
// key, to defer to a record there (a lapsed one is taken over and
// deleted).
func (a *attempt) acquireTwo(ctx context.Context, prevKey string, pair bool) (idemstore.Acquisition, error) {
	s := a.s
	prevFP := a.fp // written under the previous key: what its version computes
	if a.prevFP != "" {
		prevFP = a.prevFP
	}
	fps := [2]string{a.fp, prevFP}
	res := [2]keyResult{{key: a.key}, {key: prevKey}}
	var pending [2]bool // keys that only the script can decide
	least := int64(1)   // the least fence of a creation or takeover: above every lease read
	if s.pipe == nil {
		// A client that only runs scripts: the script creates or decides at
		// the current key, then at the previous one.
		pending = [2]bool{true, true}
	} else {
		c := newCall(ctx)
		var sets [2]*redis.BoolCmd
		var gets [2]*redis.StringCmd
		for i, k := range []string{a.key, prevKey} {
			if i == 0 || pair {
				sets[i] = redis.NewBoolCmd(ctx, "set", k, inProgressRecord(fps[i], a.req.Token, 1, s.abandonedMS), "nx", "px", s.ttlArg(a.lease+s.abandonedMS))
				c.cmds = append(c.cmds, sets[i])
			}
			gets[i] = redis.NewStringCmd(ctx, "get", k)
			c.cmds = append(c.cmds, gets[i])
		}
		s.lanes.of(ctx, s.rdb, a.key).do(c) // one pipeline, alone or with other calls' (batch.go)
		c.free()
		// What was created first, so that a failure releases it.
		var err error
		for i, set := range sets {
			if set == nil {
				continue
			}
			created, serr := set.Result()
			switch {
			case serr != nil && err == nil:
				err = s.denied("acquire", serr)
			case created:
				res[i].owned, res[i].fence = true, 1
			}
		}
		if err != nil {
			return a.settle(ctx, res, pair, err)
		}
		for i := range res {
			if res[i].owned {
				continue
			}
			if i == 1 && !pair && !res[0].owned {
				break // without pair, a record at the current key decides alone
			}
			acq, done, fence, err := a.decide(gets[i].Result())
			switch {
			case err != nil:
				return a.settle(ctx, res, pair, err)
			case done:
				res[i].acq = acq
			case i == 1 && !pair && fence == 0:
				// Nothing under the previous key, or not a record: none.
			default:
				pending[i], least = true, max(least, fence+1)
			}
		}
	}
	for i := range res {
		if !pending[i] || res[0].acq.Outcome != 0 || res[1].acq.Outcome != 0 {
			continue
		}
		if i == 1 && !pair && !(res[0].owned && res[0].fence == 1 && !res[0].recovered) {
			break // script only, without pair: the previous key counts after a creation only
		}
		acq, err := a.script(ctx, res[i].key, fps[i], least)
		if err != nil {
			return a.settle(ctx, res, pair, err)
		}
		switch acq.Outcome {
		case idemstore.OutcomeFirstRun, idemstore.OutcomeRecovered:
			res[i].owned, res[i].recovered, res[i].fence = true, acq.Outcome == idemstore.OutcomeRecovered, acq.Fence
			least = max(least, acq.Fence)
		default:
			res[i].acq = acq
		}
	}
	return a.settle(ctx, res, pair, nil)
}

// settle ends acquireTwo from what each key gave (err: the failure that
// ended it early). An answer of either key (mismatch first, then replay,
// then conflict) or a failure releases every key owned; otherwise the run
// owns its keys under the highest of their fences, raised to it in each
// key, and without pair the previous key is released (its record lives on
// under the current key).
func (a *attempt) settle(ctx context.Context, res [2]keyResult, pair bool, err error) (idemstore.Acquisition, error) {
	s := a.s
	var answer idemstore.Acquisition
	for _, o := range []idemstore.Outcome{idemstore.OutcomeMismatch, idemstore.OutcomeReplay, idemstore.OutcomeConflict} {
		for _, r := range res {
			if answer.Outcome == 0 && r.acq.Outcome == o {
				answer = r.acq
			}
		}
	}
	if err != nil || answer.Outcome != 0 || !res[0].owned {
		for _, r := range res {
			if r.owned {
				_ = s.run(ctx, "release", s.release, r.key, a.req.Token)
			}
		}
		if err == nil && answer.Outcome == 0 {
			err = &idemstore.StoreError{Op: "acquire", Err: errors.New("the current key was neither acquired nor answered")}
		}
		if err != nil {
			return idemstore.Acquisition{}, err
		}
		return answer, nil
	}
	acq := idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: max(res[0].fence, res[1].fence)}
	if res[0].recovered || res[1].recovered {
		acq.Outcome = idemstore.OutcomeRecovered
	}
	for i, r := range res {
		switch {
		case !r.owned:
		case i == 1 && !pair:
			if err := s.run(ctx, "acquire", s.release, r.key, a.req.Token); err != nil && !errors.Is(err, idemstore.ErrNotOwner) {
				return a.settle(ctx, [2]keyResult{res[0]}, pair, err)
			}
		case r.fence < acq.Fence:
			if err := s.run(ctx, "acquire", s.extend, r.key, a.req.Token, a.lease+s.abandonedMS, s.abandonedMS, acq.Fence); err != nil {
				return a.settle(ctx, res, pair, err)
			}
		}
	}
	if pair && res[1].owned {
		s.pairs.Store(a.req.Token, res[1].key)
	}
	return acq, nil
}

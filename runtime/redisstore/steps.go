package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/lua"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var _ idemstore.StepStore = (*Store)(nil)

// The journal's scripts, shared by every Store (a Script is its source and
// hash).
var (
	stepScript  = redis.NewScript(lua.Step)
	stepsScript = redis.NewScript(lua.Steps)
)

// LoadSteps implements [idemstore.StepStore]: one round trip (steps.lua).
func (s *Store) LoadSteps(ctx context.Context, key, token string) (map[string][]byte, error) {
	if err := checkKeyToken(key, token); err != nil {
		return nil, err
	}
	skey := s.storageKey(key)
	v, err := stepsScript.Run(ctx, s.rdb, []string{skey, journalKey(s.prefix, key, skey)}, token).Result()
	if err != nil {
		return nil, s.denied("steps", err)
	}
	switch v := v.(type) {
	case int64:
		if v == 0 {
			return nil, idemstore.ErrNotOwner
		}
	case []any:
		if len(v)%2 == 0 {
			steps := make(map[string][]byte, len(v)/2)
			for i := 0; i < len(v); i += 2 {
				name, nok := v[i].(string)
				result, rok := v[i+1].(string)
				if !nok || !rok {
					return nil, &idemstore.StoreError{Op: "steps", Err: fmt.Errorf("malformed journal entry %T %T", v[i], v[i+1])}
				}
				steps[name] = []byte(result)
			}
			return steps, nil
		}
	}
	return nil, &idemstore.StoreError{Op: "steps", Err: fmt.Errorf("malformed reply %v", v)}
}

// BeginStep implements [idemstore.StepStore]. A step on Redis has no writes of
// its own to commit: its Commit is one round trip (step.lua), fenced by the
// record's owner token and fence.
func (s *Store) BeginStep(ctx context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	if err := checkKeyToken(key, token); err != nil {
		return nil, err
	}
	return &stepTx{s: s, key: key, token: token, fence: fence}, nil
}

// stepTx is one step of a run on Redis.
type stepTx struct {
	s          *Store
	key, token string
	fence      int64
}

// Context implements [idemstore.StepTx]: ctx as it is.
func (t *stepTx) Context(ctx context.Context) context.Context { return ctx }

// Rollback implements [idemstore.StepTx]: nothing to undo.
func (t *stepTx) Rollback(context.Context) error { return nil }

// Commit implements [idemstore.StepTx].
func (t *stepTx) Commit(ctx context.Context, name string, result []byte, retention time.Duration) error {
	if name == "" {
		return errors.New("idem: step: empty name")
	}
	ret, err := durationMS("retention", retention, idemstore.DefaultRetention)
	if err != nil {
		return err
	}
	s := t.s
	skey := s.storageKey(t.key)
	return s.journalAcked(ctx, skey, journalKey(s.prefix, t.key, skey), t.token, t.fence, name, result, ret)
}

// journalAcked runs step.lua on the record at skey and its journal at
// jkey with ARGV args, and has the write acknowledged by the master's
// replicas as a completion is (replica.go): WAIT after it, in the lane of
// that master's acknowledged writes, where one WAIT after a batch covers
// the batch's completions and steps alike. A run that goes on after a step
// that no replica has may see a failover undo the step's journal entry and
// a re-run run the step again; so a step not acknowledged in time returns
// an error matching idemstore.ErrUnreplicated (the entry is on the master
// all the same). When the store knows of no replica it counts them as the
// write left the master, in a lane on one server's client, as a
// completion does; a Cluster's or a Ring's steps then count none.
func (s *Store) journalAcked(ctx context.Context, skey, jkey string, args ...any) error {
	node, addr, n, err := s.ackTarget(ctx, skey)
	if err != nil {
		return s.ackFailed("step", err)
	}
	keys := []string{skey, jkey}
	if n > 0 {
		return s.waited(ctx, "step", node, n, stepScript, lua.Step, keys, args...)
	}
	var done int64
	replicas := 0
	if l := s.lanes.plain; node != nil && s.acks.fixed < 0 && l != nil && l.direct {
		cmd := evalshaKeys(ctx, stepScript, keys, args...)
		c := newCall(ctx, cmd)
		c.count = true
		l.do(c)
		replicas = c.replicas
		c.free()
		done, err = cmd.Int64()
		if noScript(err) {
			replicas = 0
			done, err = stepScript.Eval(ctx, s.rdb, keys, args...).Int64()
		}
	} else {
		done, err = stepScript.Run(ctx, s.rdb, keys, args...).Int64()
	}
	switch {
	case err != nil:
		return s.denied("step", err)
	case done == 0:
		return idemstore.ErrNotOwner
	case done != 1:
		return &idemstore.StoreError{Op: "step", Err: fmt.Errorf("malformed reply %d", done)}
	case replicas > 0:
		s.sawReplicas(addr, replicas)
		return &unreplicatedError{op: "step", want: 1, unannounced: replicas}
	}
	return nil
}

// journalKey is the Redis key of the step journal of the record of key,
// stored at skey: prefix + ":{" + tag + "}:steps:" + key, where tag is a
// short string whose Cluster hash slot is skey's, so that the journal's
// scripts, which touch both, run on Redis Cluster whatever braces key
// holds (a hash tag of the record's own would need the record's key to be
// tagged, which would change every record's key). It keeps the prefix in
// front, for ACL key patterns (~prefix:*). With a prefix that holds braces
// of its own the hash tag may be the prefix's; the result is checked, and
// such a prefix gets the journal at "{" + tag + "}:steps:" + skey.
func journalKey(prefix, key, skey string) string {
	tag := slotTag(slot(skey))
	var j string
	if prefix == "" {
		j = "{" + tag + "}:steps:" + key
	} else {
		j = prefix + ":{" + tag + "}:steps:" + key
	}
	if slot(j) != slot(skey) {
		j = "{" + tag + "}:steps:" + skey
	}
	return j
}

// slot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of its hash tag
// (the text between its first '{' and the first '}' after it, when not
// empty) or of the whole key, modulo 16384.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % 16384
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), as Redis Cluster
// hashes keys.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotTags holds, for every hash slot, the smallest decimal number whose
// slot it is, built the first time a journal key is composed (a few
// hundred thousand CRCs, once per process).
var slotTags = sync.OnceValue(func() *[16384]uint32 {
	var tags [16384]uint32
	var seen [16384]bool
	left := len(tags)
	var b []byte
	for n := uint32(0); left > 0; n++ {
		b = strconv.AppendUint(b[:0], uint64(n), 10)
		sl := crc16(string(b)) % 16384
		if !seen[sl] {
			seen[sl], tags[sl] = true, n
			left--
		}
	}
	return &tags
})

// slotTag returns a hash tag of slot sl.
func slotTag(sl uint16) string {
	return strconv.FormatUint(uint64(slotTags()[sl]), 10)
}

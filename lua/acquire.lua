-- acquire.lua: the acquire transition of one idempotency key.
--
-- The record is one string (see lua.go for its formats); the script
-- touches no other key, so it runs unchanged on Redis Cluster. Time comes only
-- from Redis: a lease's deadline is its record's expiry minus the abandoned
-- TTL stored in it, so the lease left is PTTL - abandoned. It writes compact
-- in-progress records and reads records of every format, so that a record
-- written before the upgrade is replayed, refused or taken over as before.
--
-- Package redisstore first sends the plain command SET KEYS[1] <the record
-- this script's first SET writes> NX PX ARGV[3] GET (before Redis 7.0, SET NX
-- and GET pipelined), which creates an absent record or returns the one
-- there, and decides proceed, replay and mismatch from its reply; it runs
-- this script only for an in-progress record with the same fingerprint, for
-- a record gone by the GET (the two commands), and with a client that cannot
-- pipeline. Both must write byte-identical records (TestRedisStoreTransitions
-- checks it).
--
-- KEYS[1]  the record
-- ARGV[1]  owner token of this attempt (non-empty, no newline)
-- ARGV[2]  the stored fingerprint: 16 bytes, any values
-- ARGV[3]  lease + abandoned TTL in ms (> ARGV[4]): the TTL of a new lease
-- ARGV[4]  abandoned TTL in ms: how long an in-progress record outlives its
--          lease deadline before Redis deletes it
-- ARGV[5]  the request fingerprint as given (non-empty, no newline), which a
--          record of format 1 keeps
-- ARGV[6]  optional: another stored fingerprint that is this request's (the
--          one before fingerprints covered the API identity); '' for none
-- ARGV[7]  optional: the least fence a creation or takeover gets (so that
--          fences grow across the two keys of a record during an upgrade,
--          see redisstore's previous.go); 1 when absent
--
-- Returns one of
--   {'proceed', fence}          absent: created, caller owns the lease, fence 1
--                               (or ARGV[7])
--   {'recovered', fence}        lease expired: taken over, fence + 1 (at least
--                               ARGV[7])
--   {'conflict', remaining_ms}  in progress under a live lease (remaining_ms >= 1)
--   {'mismatch'}                another fingerprint; the record is untouched
--   {'replay', record}          completed: the whole stored record, decoded by the store
-- or the error 'IDEMCORRUPT ...' when the key holds a string that is not a
-- record (a key of another type answers Redis's own WRONGTYPE error).

local key = KEYS[1]
local token, fp = ARGV[1], ARGV[2]
local other = ARGV[6] or ''
local least = tonumber(ARGV[7] or '') or 1

-- Fences below 1e14 concatenate as integers (Lua's '%.14g').
if redis.call('SET', key, 'i' .. fp .. token .. '\n' .. least .. '\n' .. ARGV[4], 'NX', 'PX', ARGV[3]) then
  return {'proceed', least}
end
local v = redis.call('GET', key)

local state, same, lease_at -- lease_at: where an in-progress record's lease starts
local tag = string.sub(v, 1, 1)
local b = string.byte(v, 1) or 0
if b >= 128 and b < 192 then
  tag = 'c' -- completed, with its body's length (format 3)
end
if (tag == 'c' or tag == 'i') and #v > 17 then
  local stored_fp = string.sub(v, 2, 17)
  state, same, lease_at = tag, stored_fp == fp or (other ~= '' and stored_fp == other), 18
else -- format 1
  local stored_fp
  state, stored_fp = string.match(v, '^([IC])\n([^\n]+)\n')
  if not state then
    return redis.error_reply('IDEMCORRUPT not an idempotency record')
  end
  state, same, lease_at = string.lower(state), stored_fp == ARGV[5], #stored_fp + 4
end
if not same then
  return {'mismatch'}
end
if state == 'c' then
  return {'replay', v}
end

local fence, abandoned = string.match(string.sub(v, lease_at), '^[^\n]+\n(%d+)\n(%d+)$')
if not fence then
  return redis.error_reply('IDEMCORRUPT in-progress record lacks its lease')
end
local ttl = redis.call('PTTL', key)
if ttl < 0 then
  return redis.error_reply('IDEMCORRUPT in-progress record has no TTL')
end
local remaining = ttl - tonumber(abandoned)
if remaining > 0 then
  return {'conflict', remaining}
end

fence = math.max(tonumber(fence) + 1, least)
redis.call('SET', key, 'i' .. fp .. token .. '\n' .. fence .. '\n' .. ARGV[4], 'PX', ARGV[3])
return {'recovered', fence}

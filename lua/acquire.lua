-- acquire.lua: the acquire transition of one idempotency key.
--
-- The record is one hash (see lua.go for its fields); the script touches no
-- other key, so it runs unchanged on Redis Cluster. Time comes only from TIME.
--
-- KEYS[1]  the record
-- ARGV[1]  owner token of this attempt (non-empty)
-- ARGV[2]  request fingerprint
-- ARGV[3]  lease in ms (> 0)
-- ARGV[4]  abandoned TTL in ms: how long an in-progress record outlives its
--          lease deadline before Redis deletes it
--
-- Returns one of
--   {'proceed', fence}                        absent: created, caller owns the lease, fence 1
--   {'recovered', fence}                      lease expired: taken over, fence + 1
--   {'conflict', remaining_ms}                in progress under a live lease (remaining_ms >= 1)
--   {'mismatch'}                              another fingerprint; the record is untouched
--   {'replay', status, headers, body, flags}  completed: the stored result
-- or the error 'IDEMCORRUPT ...' when the record lacks a field this script needs
-- (the key holding another type answers Redis's own WRONGTYPE error).

local key = KEYS[1]
local token, fp = ARGV[1], ARGV[2]
local lease, abandoned = tonumber(ARGV[3]), tonumber(ARGV[4])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local r = redis.call('HMGET', key, 'state', 'fp', 'fence', 'deadline', 'status', 'headers', 'body', 'flags')
local state, stored_fp = r[1], r[2]

if not state then
  if stored_fp then
    return redis.error_reply('IDEMCORRUPT record has no state')
  end
  redis.call('HSET', key, 'state', 'in_progress', 'fp', fp, 'owner', token, 'fence', 1, 'deadline', now + lease)
  redis.call('PEXPIRE', key, lease + abandoned)
  return {'proceed', 1}
end

if not stored_fp then
  return redis.error_reply('IDEMCORRUPT record has no fingerprint')
end
if stored_fp ~= fp then
  return {'mismatch'}
end

if state == 'completed' then
  if not (r[5] and r[6] and r[7] and r[8]) then
    return redis.error_reply('IDEMCORRUPT completed record lacks its result')
  end
  return {'replay', tonumber(r[5]), r[6], r[7], tonumber(r[8])}
end

if state ~= 'in_progress' or not (r[3] and r[4]) then
  return redis.error_reply('IDEMCORRUPT unknown state or missing lease')
end

local deadline = tonumber(r[4])
if deadline > now then
  return {'conflict', deadline - now}
end

local fence = redis.call('HINCRBY', key, 'fence', 1)
redis.call('HSET', key, 'owner', token, 'deadline', now + lease)
redis.call('PEXPIRE', key, lease + abandoned)
return {'recovered', fence}

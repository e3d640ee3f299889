-- step.lua: journal one step's result under an in-progress record.
--
-- Only the record's current owner (token and fence) may write the journal,
-- so a stale worker whose lease was taken over never records a step. The
-- journal is a hash beside the record, in the same Cluster slot (the store
-- picks its hash tag so: see redisstore/steps.go). It belongs to the
-- record's fingerprint: a journal written for another fingerprint (the key
-- reused with another payload after a release) is dropped first.
--
-- KEYS[1]  the record
-- KEYS[2]  its journal
-- ARGV[1]  owner token
-- ARGV[2]  fence
-- ARGV[3]  step name (non-empty)
-- ARGV[4]  the step's result
-- ARGV[5]  retention in ms (> 0): the journal lives at least this long from
--          now, and at least as long as the record
--
-- Fields of the journal: "f" the record's fingerprint, "s" .. name a
-- step's result.
--
-- Returns 1 when journaled, 0 when refused (absent, completed, format 1, or
-- another owner or fence).

local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'i' then
  return 0
end
local owner, fence = string.match(string.sub(v, 18), '^([^\n]+)\n(%d+)\n%d+$')
if owner ~= ARGV[1] or fence ~= ARGV[2] then
  return 0
end

local fp = string.sub(v, 2, 17)
if redis.call('HGET', KEYS[2], 'f') ~= fp then
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[2], 'f', fp, 's' .. ARGV[3], ARGV[4])
local ttl = math.max(tonumber(ARGV[5]), redis.call('PTTL', KEYS[1]))
redis.call('PEXPIRE', KEYS[2], ttl)
return 1

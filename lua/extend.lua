-- extend.lua: the heartbeat; push the lease deadline of an in-progress record.
--
-- An owner whose lease ran out but was not taken over may still extend it.
--
-- KEYS[1]  the record
-- ARGV[1]  owner token
-- ARGV[2]  lease in ms (> 0): the new deadline is now + lease
-- ARGV[3]  abandoned TTL in ms, as in acquire.lua
--
-- Returns 1 when extended, 0 when refused (absent, completed, or another owner).

local key = KEYS[1]
local r = redis.call('HMGET', key, 'state', 'owner')
if r[1] ~= 'in_progress' or r[2] ~= ARGV[1] then
  return 0
end

local lease, abandoned = tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

redis.call('HSET', key, 'deadline', now + lease)
redis.call('PEXPIRE', key, lease + abandoned)
return 1

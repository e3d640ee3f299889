-- extend.lua: the heartbeat; push the lease deadline of an in-progress record.
--
-- An owner whose lease ran out but was not taken over may still extend it.
-- Only compact records have an owner this store's scripts serve (see
-- complete.lua).
--
-- KEYS[1]  the record
-- ARGV[1]  owner token
-- ARGV[2]  lease + abandoned TTL in ms, as in acquire.lua: the new deadline
--          is now + lease
-- ARGV[3]  abandoned TTL in ms, as in acquire.lua
-- ARGV[4]  optional: the least fence the record is to hold (raised to it,
--          never lowered), for an owner of two keys of one record during an
--          upgrade (see acquire.lua's ARGV[7])
--
-- Returns 1 when extended, 0 when refused (absent, completed, or another owner).

local key = KEYS[1]
local v = redis.call('GET', key)
if not v or string.sub(v, 1, 1) ~= 'i' then
  return 0
end
local owner, fence = string.match(string.sub(v, 18), '^([^\n]+)\n(%d+)\n%d+$')
if owner ~= ARGV[1] then
  return 0
end

if ARGV[4] then
  fence = math.max(tonumber(fence), tonumber(ARGV[4]))
end
redis.call('SET', key, string.sub(v, 1, 17) .. owner .. '\n' .. fence .. '\n' .. ARGV[3], 'PX', ARGV[2])
return 1

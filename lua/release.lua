-- release.lua: give up an in-progress lease so that a retry runs again.
--
-- Only compact records have an owner this store's scripts serve (see
-- complete.lua).
--
-- KEYS[1]  the record
-- ARGV[1]  owner token
--
-- Returns 1 when the record was deleted, 0 when refused (absent, completed,
-- or another owner).

local key = KEYS[1]
local v = redis.call('GET', key)
if not v or string.sub(v, 1, 1) ~= 'i' or string.match(string.sub(v, 18), '^([^\n]+)\n%d+\n%d+$') ~= ARGV[1] then
  return 0
end

redis.call('DEL', key)
return 1

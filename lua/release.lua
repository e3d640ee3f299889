-- release.lua: give up an in-progress lease so that a retry runs again.
--
-- KEYS[1]  the record
-- ARGV[1]  owner token
--
-- Returns 1 when the record was deleted, 0 when refused (absent, completed,
-- or another owner).

local key = KEYS[1]
local r = redis.call('HMGET', key, 'state', 'owner')
if r[1] ~= 'in_progress' or r[2] ~= ARGV[1] then
  return 0
end

redis.call('DEL', key)
return 1

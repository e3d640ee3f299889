-- forget.lua: delete one record, for an operator who repairs one key.
--
-- A completed record is deleted at once: the next request with its key runs
-- the operation again. An in-progress record is deleted only when forced:
-- its handler may still be running, and a retry would run the operation a
-- second time beside it (the stale owner's complete and release are then
-- refused, since its token no longer owns the key).
--
-- It reads records of both formats (see lua.go).
--
-- KEYS[1]  the record
-- ARGV[1]  "force" to delete an in-progress record too; "" refuses it
--
-- Returns 1 when deleted, 0 when there was no record, -1 when refused (an
-- in-progress record, not forced).

local key = KEYS[1]
local v = redis.call('GET', key)
if not v then
  return 0
end
if (string.sub(v, 1, 1) == 'i' or string.sub(v, 1, 2) == 'I\n') and ARGV[1] ~= 'force' then
  return -1
end

redis.call('DEL', key)
return 1

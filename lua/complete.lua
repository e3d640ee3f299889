-- complete.lua: store the result of an in-progress record.
--
-- Only the current owner of an in-progress record may complete it, so a stale
-- worker whose lease was taken over never overwrites the newer owner's work.
-- An owner whose lease ran out but was not taken over may still complete.
--
-- KEYS[1]  the record
-- ARGV[1]  owner token
-- ARGV[2]  HTTP status
-- ARGV[3]  headers, encoded by the store
-- ARGV[4]  body, possibly compressed (see flags)
-- ARGV[5]  flags: 1 body omitted, 2 body gzip-compressed
-- ARGV[6]  retention in ms (> 0): the record expires this long from now
--
-- Returns 1 when stored, 0 when refused (absent, completed, or another owner).

local key = KEYS[1]
local r = redis.call('HMGET', key, 'state', 'owner')
if r[1] ~= 'in_progress' or r[2] ~= ARGV[1] then
  return 0
end

redis.call('HDEL', key, 'owner', 'deadline')
redis.call('HSET', key, 'state', 'completed', 'status', ARGV[2], 'headers', ARGV[3], 'body', ARGV[4], 'flags', ARGV[5])
redis.call('PEXPIRE', key, ARGV[6])
return 1

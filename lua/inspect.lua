-- inspect.lua: read one record and its time to live in one atomic step, for
-- an operator who looks at one key. It changes nothing.
--
-- KEYS[1]  the record
--
-- Returns {record, pttl_ms} (pttl_ms is -1 for a key without expiry), or an
-- empty array when there is no record.

local key = KEYS[1]
local v = redis.call('GET', key)
if not v then
  return {}
end
return {v, redis.call('PTTL', key)}

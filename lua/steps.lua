-- steps.lua: read the step journal of an in-progress record for its owner.
--
-- KEYS[1]  the record
-- KEYS[2]  its journal (see step.lua)
-- ARGV[1]  owner token
--
-- Returns 0 when the caller does not own the record (absent, completed,
-- format 1, or another owner), else a flat array of step names and results,
-- empty when the journal is absent or belongs to another fingerprint.

local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'i' then
  return 0
end
if string.match(string.sub(v, 18), '^([^\n]+)\n%d+\n%d+$') ~= ARGV[1] then
  return 0
end

local out = {}
local all = redis.call('HGETALL', KEYS[2])
local fp = string.sub(v, 2, 17)
local journaled = false
for i = 1, #all, 2 do
  if all[i] == 'f' then
    journaled = all[i + 1] == fp
  end
end
if not journaled then
  return out
end
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 1) == 's' then
    out[#out + 1] = string.sub(all[i], 2)
    out[#out + 1] = all[i + 1]
  end
end
return out

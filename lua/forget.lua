-- forget.lua: delete one record and its step journal, for an operator who
-- repairs one key.
--
-- A completed record is deleted at once: the next request with its key runs
-- the operation again. An in-progress record is deleted only when forced:
-- its handler may still be running, and a retry would run the operation a
-- second time beside it (the stale owner's complete and release are then
-- refused, since its token no longer owns the key).
--
-- The step journal outlives a released record (a retry of the same request
-- resumes from it), so a key whose run failed may have a journal and no
-- record: forgetting the key deletes the journal too, after which every
-- step of the next request runs again (a step read as another type than
-- it was journaled as fails its run until then: see idem.StepTypeError).
-- A refused forget keeps both.
--
-- It reads records of both formats (see lua.go).
--
-- KEYS[1]  the record
-- KEYS[2]  its step journal (see step.lua), in the record's Cluster slot
-- ARGV[1]  "force" to delete an in-progress record too; "" refuses it
--
-- Returns 1 when the record was deleted, 2 when only the journal was (no
-- record), 3 when both were, 0 when there was neither, -1 when refused (an
-- in-progress record, not forced).

local key = KEYS[1]
local v = redis.call('GET', key)
if v and (string.sub(v, 1, 1) == 'i' or string.sub(v, 1, 2) == 'I\n') and ARGV[1] ~= 'force' then
  return -1
end

local n = 0
if v then
  redis.call('DEL', key)
  n = 1
end
if redis.call('DEL', KEYS[2]) == 1 then
  n = n + 2
end
return n

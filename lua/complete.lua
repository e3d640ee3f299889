-- complete.lua: store the result of an in-progress record.
--
-- Only the current owner of an in-progress record may complete it, so a stale
-- worker whose lease was taken over never overwrites the newer owner's work.
-- An owner whose lease ran out but was not taken over may still complete.
-- Only compact records (format 2, see lua.go) have an owner this store's
-- scripts serve: a lease of format 1 belongs to a process of the version
-- before, which completes it with its own script.
--
-- KEYS[1]  the record
-- ARGV[1]  owner token
-- ARGV[2]  the result, encoded by the store (see lua.go)
-- ARGV[3]  retention in ms (> 0): the record expires this long from now
-- ARGV[4]  optional: "r" to count the master's connected replicas when it
--          stores (INFO replication, read in the same atomic step as the
--          write); absent or anything else counts none. Package redisstore
--          asks for it only where it cannot send one INFO replication after
--          a batch of completions on their connection (a Cluster's or a
--          Ring's pipelines route by key): INFO costs Redis more than the
--          rest of the script.
-- ARGV[5]  optional: the completed record's tag, one byte ('c' when absent;
--          a record that carries its body's length has a tag of its own,
--          see lua.go)
--
-- Returns 0 when refused (absent, completed, or another owner), and when
-- stored 1 plus the replicas counted: a store that sent no WAIT after this
-- script learns from the reply whether a replica was attached when the
-- result was written (a replica that attaches later gets the record with its
-- initial sync). A server that answers INFO with an error (a user denied it)
-- counts none, as the store's checks do.

local key = KEYS[1]
local v = redis.call('GET', key)
if not v or string.sub(v, 1, 1) ~= 'i' or string.match(string.sub(v, 18), '^([^\n]+)\n%d+\n%d+$') ~= ARGV[1] then
  return 0
end

redis.call('SET', key, (ARGV[5] or 'c') .. string.sub(v, 2, 17) .. ARGV[2], 'PX', ARGV[3])
if ARGV[4] ~= 'r' then
  return 1
end
-- After the write: a script that read a nondeterministic command first
-- could not write under verbatim script replication (Redis before 5).
local info = redis.pcall('INFO', 'replication')
if type(info) ~= 'string' then
  return 1
end
return 1 + (tonumber(string.match(info, '\nconnected_slaves:(%d+)')) or 0)

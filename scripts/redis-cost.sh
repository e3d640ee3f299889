#!/usr/bin/env bash
# scripts/redis-cost.sh: Redis's own time per call of each acquire path
# (BENCHMARKS.md, "Redis work per request").
#
# Starts a throwaway redis-server on a free loopback port (persistence off),
# drives each command below with redis-benchmark (16 clients, N calls, random
# keys, so a create really creates) and prints INFO commandstats
# usec_per_call of the command measured. Acquire is one SET NX PX GET on
# Redis 7.0 and later; before 7.0 it pipelines SET NX PX and GET, whose cost
# inside Redis is the sum of their two rows. usec_per_call is the time Redis
# spends inside the command, without the network and event-loop work every
# command costs alike; for scripts it is the whole EVALSHA, including the
# commands the script calls.
#
#   scripts/redis-cost.sh [N]     (default N=200000; needs redis-server,
#                                  redis-cli and redis-benchmark on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}

for tool in redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "redis-cost.sh: $tool not on PATH" >&2; exit 2; }
done
# The throwaway server's functions (start_redis, cleanup), as scripts/test.sh
# uses them.
. scripts/servers.sh
trap cleanup EXIT
start_redis
port=$STARTED_PORT
cli() { redis-cli -p "$port" "$@"; }

fp=9f86d081884c7d659a2feb15d0c69e3ec8d0a4a5c1e0b5f1f2d0d5d1b2c3a4f5
# The record keeps the first 16 bytes of the fingerprint's SHA-256 (these
# hold neither NUL nor newline, so bash can pass them as an argument).
fpraw=$'\x9f\x86\xd0\x81\x88\x4c\x7d\x65\x9a\x2f\xeb\x15\xd0\xc6\x9e\x3e'
token=6PZJ4B3KQ2WXNRXK2Q7VJMCZ5A
body=$(printf '{"id":"ord_5c1f0e9a7b3d2c41","status":"created","pad":"%0150d"}' 0)
# Compact records (lua/lua.go): in progress, "i" fingerprint owner, fence
# and abandoned TTL; completed, "c" fingerprint, status 201 ("2!"), meta
# "d" (Content-Type: application/json, a header block follows), the block
# (30 bytes: Location, 28 bytes of value) and the body.
inprogress=$'i'"$fpraw$token"$'\n1\n60000'
completed=$'c'"$fpraw"$'2!d\x1e\x02\x1c/orders/ord_5c1f0e9a7b3d2c41'"$body"
acquire=$(cli script load "$(cat lua/acquire.lua)")
trivial=$(cli script load 'return 1')
setpx=$(cli script load "return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])")
cli set replayed "$completed" >/dev/null

# The rows measure what they say: a create creates, a replay replays.
check() { [ "$1" = "$2" ] || { echo "redis-cost.sh: $3: got '$1', want '$2'" >&2; exit 1; }; }
check "$(cli evalsha "$acquire" 1 replayed "$token" "$fpraw" 90000 60000 "$fp" | head -1)" replay 'acquire.lua of the completed record'
check "$(cli evalsha "$acquire" 1 fresh "$token" "$fpraw" 90000 60000 "$fp" | head -1)" proceed 'acquire.lua of an absent key'
check "$(cli get fresh)" "$inprogress" 'the record acquire.lua creates'
check "$(cli set replayed "$inprogress" nx px 90000)" "" 'SET NX of the completed record'
check "$(cli get replayed)" "$completed" 'GET of the completed record, after SET NX'
check "$(cli set fresh2 "$inprogress" nx px 90000)" OK 'SET NX of an absent key'
check "$(cli set replayed "$inprogress" nx px 90000 get)" "$completed" 'SET NX GET of the completed record'
check "$(cli set fresh3 "$inprogress" nx px 90000 get)" "" 'SET NX GET of an absent key'

# measure LABEL STAT CMD...: usec_per_call of STAT after N calls of CMD.
measure() {
  local label=$1 stat=$2; shift 2
  cli config resetstat >/dev/null
  redis-benchmark -p "$port" -c 16 -n "$N" -r 1000000000 -q "$@" >/dev/null
  local us
  us=$(cli info commandstats | tr -d '\r' | sed -n "s/^cmdstat_$stat:.*usec_per_call=\([0-9.]*\).*/\1/p")
  printf '| %s | %s |\n' "$label" "$us"
}

echo "| command | µs per call inside Redis |"
echo "|---|--:|"
measure 'create: SET key <in-progress record> NX PX ttl (before Redis 7.0, with GET)' set \
  set "new:__rand_int__" "$inprogress" nx px 90000
measure 'create or replay: GET of a record' get \
  get replayed
measure 'create: one SET key <in-progress record> NX PX ttl GET (Redis 7.0 and later)' set \
  set "new2:__rand_int__" "$inprogress" nx px 90000 get
measure 'create: EVALSHA acquire.lua' evalsha \
  evalsha "$acquire" 1 "lua:__rand_int__" "$token" "$fpraw" 90000 60000 "$fp"
measure 'replay: SET NX PX of a completed record (before Redis 7.0, with GET)' set \
  set replayed "$inprogress" nx px 90000
measure 'replay: one SET NX PX GET of a completed record (Redis 7.0 and later)' set \
  set replayed "$inprogress" nx px 90000 get
measure 'replay: EVALSHA acquire.lua of a completed record' evalsha \
  evalsha "$acquire" 1 replayed "$token" "$fpraw" 90000 60000 "$fp"
measure 'EVALSHA of redis.call SET PX (floor-store)' evalsha \
  evalsha "$setpx" 1 "setpx:__rand_int__" "$inprogress" 90000
measure 'EVALSHA of `return 1` (floor)' evalsha \
  evalsha "$trivial" 1 "trivial:__rand_int__"

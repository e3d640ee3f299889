// Package lua holds the Redis Lua scripts of idemgen's runtime state machine,
// embedded as strings. It is an implementation detail of package redisstore
// (runtime/redisstore), its only importer, which runs them through go-redis
// Script (EVALSHA, falling back to EVAL on NOSCRIPT); it is a package of its
// own only because //go:embed cannot reach a parent folder. It is not an API:
// the record format below may change with the store.
//
// Every script touches exactly one key, KEYS[1], so it runs unchanged on
// Redis Cluster. Time comes only from Redis, never from the application: a
// lease deadline is kept as the record's own expiry (see below). The scripts
// rely on effects replication, the default since Redis 5 and the only mode
// since Redis 7, and they also run on miniredis.
//
// A record is one Redis string, so that a script needs at most one GET and
// one SET ... PX (acquire on an absent key: a single SET NX), and a record
// is one compact allocation in Redis (a hash with a value over 64 bytes
// leaves the listpack encoding for a hash table; BENCHMARKS.md has the
// memory and time this saves). Its lines are separated by "\n"; the owner
// token and the fingerprint never contain one:
//
//	in progress:  "I\n" fingerprint "\n" owner "\n" fence "\n" abandoned
//	completed:    "C\n" fingerprint "\n" result
//
// fence is the fencing token (1 on creation, +1 on every takeover) and
// abandoned how long, in ms, the record outlives its lease, both decimal. An
// in-progress record is written with a TTL of lease + abandoned, so its lease
// deadline is its expiry minus abandoned and the lease left is its PTTL minus
// abandoned: no TIME call, no deadline to compute or store. A completed
// record expires after its retention.
//
// result is written by the store and only passed through by the scripts;
// package redisstore encodes it as
//
//	status " " flags " " header_length "\n" header body
//
// with status the HTTP status, flags 1 (body omitted) | 2 (body
// gzip-compressed), header header_length bytes of "Name: value\n" lines,
// and body the rest of the string.
package lua

import _ "embed"

// Acquire is acquire.lua: create, replay, refuse or take over a record.
// Package redisstore first pipelines SET key record NX PX ttl, which creates an
// absent record exactly as the script would, and GET key, which returns one
// already there, and runs the script only for an in-progress record
// (conflict or takeover), for a record gone between the two commands, and
// with a client that cannot pipeline.
//
//go:embed acquire.lua
var Acquire string

// Complete is complete.lua: store the owner's result in its record.
//
//go:embed complete.lua
var Complete string

// Release is release.lua: delete the owner's in-progress record.
//
//go:embed release.lua
var Release string

// Extend is extend.lua: push the owner's lease deadline.
//
//go:embed extend.lua
var Extend string

// Inspect is inspect.lua: read a record and its TTL, for an operator.
//
//go:embed inspect.lua
var Inspect string

// Forget is forget.lua: delete a record for an operator, an in-progress one
// only when forced.
//
//go:embed forget.lua
var Forget string

// Package lua holds the Redis Lua scripts of idemgen's runtime state machine,
// embedded as strings. It is an implementation detail of package redisstore
// (runtime/redisstore), its only importer, which runs them through go-redis
// Script (EVALSHA, falling back to EVAL on NOSCRIPT); it is a package of its
// own only because //go:embed cannot reach a parent folder. It is not an API:
// the record format below may change with the store.
//
// Every script touches exactly one key, KEYS[1], so it runs unchanged on
// Redis Cluster; the step journal's two (steps.go) and forget.lua touch
// the record and a key in its slot. Time comes only from Redis, never from
// the application: a lease deadline is kept as the record's own expiry
// (see below). The scripts rely on effects replication, the default since
// Redis 5 and the only mode since Redis 7, and they also run on miniredis.
//
// A record is one Redis string, so that a script needs at most one GET and
// one SET ... PX (acquire on an absent key: a single SET NX), and a record
// is one compact allocation in Redis (a hash with a value over 64 bytes
// leaves the listpack encoding for a hash table, which costs each record
// more memory and Redis more time). The store writes the compact record:
//
//	in progress:  "i" fingerprint owner "\n" fence "\n" abandoned
//	completed:    tag fingerprint result                     (format 3)
//	              "c" fingerprint status meta rest           (format 2)
//
// fingerprint is 16 bytes of any value (the store's storedFingerprint:
// half of the request's SHA-256), owner the owner token (no newline), fence
// the fencing token (1 on creation, +1 on every takeover) and abandoned how
// long, in ms, the record outlives its lease, both decimal. An in-progress
// record is written with a TTL of lease + abandoned, so its lease deadline
// is its expiry minus abandoned and the lease left is its PTTL minus
// abandoned: no TIME call, no deadline to compute or store. A completed
// record expires after its retention, and keeps neither owner nor fence.
//
// The tag and result are written by the store and only passed through by
// the scripts (complete.lua's ARGV[4] and ARGV[2]). A completed record of
// format 3 carries its body's length, so that a record cut short anywhere
// does not decode: its tag is 0x80 plus the meta bits 0-5 below (0x80 to
// 0xbf), and
//
//	result = uvarint(body_length << 10 | status) [header_length header] body
//
// with body exactly body_length bytes. Format 2, which the store writes
// only under a previous key during a rollout (the previous version reads
// no other), has the tag "c", the status in two bytes, its first digit in
// ASCII and the other two as a byte of ' ' plus their value ("2!" is 201),
// and the meta byte; its body is the rest of the string, so a record of a
// JSON response reads in redis-cli as "c", the fingerprint's bytes, "2!D"
// and the body. meta: bit 0 body omitted, bit 1 body gzip-compressed, bits
// 2-4 a code for a common Content-Type (0: none, or stored as a header
// entry), bit 5 a header block follows, bit 6 always set (printable). The
// header block is header_length (a uvarint) bytes of entries, each a name,
// one byte of a code for a name of the replay allow-list or 0 followed by
// the name as a uvarint length and bytes, and a value, as a uvarint length
// and bytes. The codes are in package redisstore (codec.go) and never
// change meaning.
//
// The scripts also read the text record the store wrote before (format 1),
// so that a retry across an upgrade is replayed, refused or sees its lease
// as before (acquire.lua, forget.lua, inspect.lua); they never write one,
// and complete, release and extend refuse one, which only a process of the
// version before can own. Its lines are separated by "\n":
//
//	in progress:  "I\n" fingerprint "\n" owner "\n" fence "\n" abandoned
//	completed:    "C\n" fingerprint "\n" status " " flags " " header_length "\n" header body
//
// with the fingerprint as the store was given it (64 hex digits) and header
// "Name: value\n" lines. A process of the version before cannot read a
// compact record: while both versions serve one Redis (a rolling upgrade),
// the old one answers a retry of a key the new one wrote with 503
// store-unavailable (its acquire.lua answers IDEMCORRUPT), which a client
// retries; with fail-open it runs the handler unprotected, marked
// Idempotency-Degraded, so a fail-open service should not mix the versions.
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

// Forget is forget.lua: delete a record and its step journal for an
// operator, an in-progress record only when forced.
//
//go:embed forget.lua
var Forget string

// Package lua holds the Redis Lua scripts of idemgen's runtime state machine,
// embedded as strings. Package idem runs them through go-redis Script
// (EVALSHA, falling back to EVAL on NOSCRIPT).
//
// Every script touches exactly one key, KEYS[1], so it runs unchanged on
// Redis Cluster, and takes time only from Redis TIME. The scripts rely on
// effects replication, the default since Redis 5 and the only mode since
// Redis 7, and they also run on miniredis.
//
// A record is one hash with these fields:
//
//	state     "in_progress" or "completed"
//	fp        request fingerprint
//	fence     fencing token: 1 on creation, +1 on every takeover
//	owner     owner token of the current lease (in_progress only)
//	deadline  lease deadline, ms since the Unix epoch by Redis TIME (in_progress only)
//	status    HTTP status (completed only)
//	headers   response headers as encoded by the store (completed only)
//	body      response body, possibly compressed (completed only)
//	flags     1 body omitted, 2 body gzip-compressed (completed only)
//
// An in-progress record expires at its lease deadline plus the store's
// abandoned TTL; a completed record expires after its retention.
package lua

import _ "embed"

// Acquire is acquire.lua: create, replay, refuse or take over a record.
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

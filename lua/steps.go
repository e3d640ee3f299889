package lua

import _ "embed"

// The step journal's scripts, and forget.lua, which deletes a journal with
// its record, are the only ones that touch two keys: the record (KEYS[1]),
// whose owner they check, and its journal (KEYS[2]), a
// hash whose hash tag the store chooses so that it lies in the record's
// Cluster slot (see package redisstore, steps.go). On a Ring, KEYS[1]
// picks the shard, which holds both.

// Step is step.lua: journal a step's result for the record's owner.
//
//go:embed step.lua
var Step string

// Steps is steps.lua: read the step journal for the record's owner.
//
//go:embed steps.lua
var Steps string

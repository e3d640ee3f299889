//go:build race

package redisstore

// raceEnabled reports whether the race detector is on: it instruments
// every byte loop and adds allocations of its own, so allocation bounds
// are measured without it.
const raceEnabled = true

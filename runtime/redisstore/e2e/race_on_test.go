//go:build race

package e2e_test

// raceEnabled reports whether the race detector is on: it instruments
// every byte loop (gzip runs ~100 times slower) and adds allocations of
// its own, so allocation bounds are measured without it.
const raceEnabled = true

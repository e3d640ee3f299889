// Package loadtest is the library behind cmd/idemload, the load harness that
// proves idemgen's runtime on loopback: it serves one trivial handler five
// ways (bare, naive check-then-set, naive SET NX locking, idemgen's engine,
// and a floor of the handler plus two trivial EVALSHA calls), drives them
// with unique keys, replays and concurrent duplicates, and prints markdown
// tables of throughput, latency and duplicate executions. Further modes
// measure Redis memory per stored record and acquire+complete pairs per
// second per Redis shard, for the capacity table in BENCHMARKS.md.
//
// Everything listens on and connects to 127.0.0.1 only, and every run is
// bounded in time and in requests.
package loadtest

// Package storebench holds the benchmark that compares the stores on one
// handler (BENCHMARKS.md, "PostgreSQL store"): it is a package of its own so
// that neither store's package needs the other's driver.
package storebench

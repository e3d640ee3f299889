// Package storebench holds the benchmarks that compare the stores on one
// handler (BENCHMARKS.md, "PostgreSQL store"): it is a package of its own so
// that neither store's package needs the other's driver. Its harness
// (Harness, Variant) runs the handler under pgstore and under the
// one-transaction floor, and under any other layer a benchmark adds as a
// Variant.
package storebench

// Package storebench holds the benchmarks that measure the SQL stores
// against their floor (BENCHMARKS.md, "SQL stores against their floor") and
// compare the stores on one handler: it is a module of its own, for tests
// only, so that no store's module needs the other's driver nor the
// harness's meters. Its harness (Run, Variant) runs one handler that
// INSERTs a payment under each variant of a store, the one-transaction
// floor first, in one shape for PostgreSQL (Postgres) and MySQL (MySQL),
// and prints the same table for both.
package storebench

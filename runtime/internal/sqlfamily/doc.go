// Package sqlfamily is what the SQL stores (pgstore, mysqlstore) share, so
// that it is written once: each store keeps only its dialect and its
// driver's glue.
//
// A store describes its dialect once ([Dialect]: its name, limits, how it
// quotes a name, how its driver's errors read) and keeps a [Core]: its
// options and their defaults ([Options]), its table's names ([Table]),
// the verdict of its Check that refuses acquires while the table or
// server is misconfigured ([Core.Verified], [Core.Refused]), its
// background purge ([Core.Admit], [Core.PurgeAll]) and its argument
// checks. The step journal's reading ([Dialect.Steps]), Check's reading of
// columns and the sentences of its problems, and the duration conversions
// are functions of their own. [Turn] shares a run's connection between
// its handler and its keep-alive.
package sqlfamily

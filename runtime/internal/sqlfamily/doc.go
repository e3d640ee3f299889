// Package sqlfamily is what the SQL stores (pgstore, mysqlstore) share, so
// that it is written once: each store keeps only its dialect and its
// driver's glue.
//
// A store describes its dialect once ([Dialect]: its name, limits, how it
// quotes a name, how its driver's errors read) and keeps a [Store], which
// runs the flows of its idemstore methods (the argument checks, the
// answers, the open runs, the step transaction's end: [StepTx]) over the
// store's [Driver], what it sends to its database. The Store holds a
// [Core]: its options and their defaults ([Options]), its table's names
// ([Table]),
// the verdict of its Check that refuses acquires while the table or
// server is misconfigured ([Core.Verified], [Core.Refused]), the checks
// that admit an acquire and start the background purge ([Core.Admit]),
// the purge itself ([Core.PurgeAll]) and the other argument checks.
//
// What the stores' protocol does with a statement's outcome is written
// here too, the store only running the statement: the answer of a
// statement on the owner's row ([Core.Changed]), of a read's record
// ([Row.Answer]), of a claim ([Claimed], [Dialect.Held], [Moment]), of a
// run's keep-alive ([Dialect.KeptAlive]), the lookup
// of a COMMIT whose answer was lost ([Dialect.LostCommit]), a step's
// commit and rollback ([Dialect.CommitStep], over the store's [Step]),
// and the journal's reading ([Dialect.Steps]). [Runs] are a store's open
// runs by key and token; Check's structure ([Core.CheckWith]), the
// table's columns it expects ([RecordColumns]), its reading of them
// ([Columns]) and the sentences of its problems, and the
// duration conversions are functions of their own. [Turn] shares a run's
// connection between its handler and its keep-alive.
package sqlfamily

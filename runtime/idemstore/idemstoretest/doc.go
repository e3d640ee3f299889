// Package idemstoretest is the conformance suite of idemgen's stores: the
// state machine of package idemstore stated as tests, which packages
// redisstore, pgstore, mysqlstore and memstore run, and which a store of
// one's own (DynamoDB, a wrapper around another store) runs from its tests
// with [Run]:
//
//	func TestConformance(t *testing.T) {
//		idemstoretest.Run(t, idemstoretest.Harness{
//			New: func() (idemstore.Store, error) { return mystore.New(client), nil },
//		})
//	}
//
// It checks every outcome of an acquire (a first run with fence 1, a
// replay of status, headers and body, a mismatch that leaves the record
// untouched, a conflict with the remaining lease, a takeover of a lapsed
// lease with the fence one higher), that only the lease's owner completes,
// extends or releases it (ErrNotOwner otherwise, for a stale owner too),
// the lapse of a lease and the retention of a result, many acquires of one
// key at once with exactly one winner; for a [idemstore.TxStore], that a
// run's writes commit with its record or not at all; and, for a
// [idemstore.StepStore], that a run's journaled steps are loaded by the run
// that takes its lapsed lease over (or runs the same request again after a
// release), never by a request of another fingerprint, and that a stale
// run journals nothing.
//
// A store whose clock the test controls (miniredis, a fake clock) passes
// [Harness].Advance, and the suite then also checks the exact boundaries of
// leases and retentions; otherwise the checks wait for short leases to
// lapse, polling the store. [Check] runs the same checks and returns what
// failed, which is how the suite's own tests show it failing broken
// stores.
package idemstoretest

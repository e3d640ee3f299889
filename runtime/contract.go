package idem

import "github.com/idemgen/idemgen/runtime/idemstore"

// Store is the store an [Engine] runs on: the atomic per-key state machine
// of package idemstore ([idemstore.Store]), which defines the contract,
// its types and its key layout. Packages redisstore, pgstore, mysqlstore
// and idemstore/memstore implement it.
type Store = idemstore.Store

// The failures of a store, defined by package idemstore: the errors of
// [Do], of the engine's hooks ([Event].Err) and of the stores match them
// under errors.Is.
var (
	// ErrStoreUnavailable is matched by every failure of the store itself
	// (see [idemstore.ErrStoreUnavailable]).
	ErrStoreUnavailable = idemstore.ErrStoreUnavailable
	// ErrStoreMisconfigured is matched by the failures of a store set up so
	// that it cannot keep the promise (see [idemstore.ErrStoreMisconfigured]).
	ErrStoreMisconfigured = idemstore.ErrStoreMisconfigured
	// ErrUnreplicated is matched by a result stored but not confirmed
	// durable in time (see [idemstore.ErrUnreplicated]).
	ErrUnreplicated = idemstore.ErrUnreplicated
	// ErrTxEnded is matched by the failure of a run whose handler ended
	// the store's transaction itself (see [idemstore.ErrTxEnded]).
	ErrTxEnded = idemstore.ErrTxEnded
)

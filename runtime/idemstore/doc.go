// Package idemstore is the contract between idemgen's engine (package idem)
// and its stores, as database/sql/driver is for database/sql: what a store
// implements and nothing that runs requests. Packages redisstore, pgstore,
// mysqlstore and memstore import it, and so does a store of one's own
// (DynamoDB, a wrapper); it imports only the standard library.
//
// # The state machine
//
// A [Store] keeps one record per key and changes it atomically: [Store.Acquire]
// answers an [AcquireRequest] with an [Acquisition] whose [Outcome] is a first
// run (fence 1), a takeover of a lapsed lease (fence + 1), a replay of the
// stored [Record], a conflict with the remaining lease, or a fingerprint
// mismatch; [Store.Complete], [Store.Release] and [Store.Extend] act only for
// the lease's owner and return [ErrNotOwner] otherwise. A store reports its
// own failures as a [*StoreError], which matches [ErrStoreUnavailable];
// [ErrStoreMisconfigured] and [ErrUnreplicated] say more. A [TxStore]
// (pgstore) claims a key inside a transaction of its own ([RunTx]), in
// which the handler runs and which commits the claim, the handler's writes
// and the stored result at once. A [StepStore] keeps
// the journal of a run's steps (idem.Step), each entry written by the
// lease's owner only ([StepTx]).
//
// # Keys
//
// The engine hands a store the key a record is kept under: [RecordKeyIn]
// composes it (the API and operation as an [OperationToken], the scope as a
// [ScopeKey], the client's key), [SplitRecordKey] takes one apart, for tools
// that list records (idemctl); an [OperationNamer] keeps the names behind
// the tokens. The layout before is redisstore/previouslayout's, the
// decorator that migrates records during an upgrade, from what
// [AcquireRequest.Origin] says a key was composed of.
package idemstore

package idemstore

import (
	"context"
	"errors"
	"time"
)

// ErrTxEnded is matched (errors.Is) by the error of a [RunTx.Commit] whose
// handler ended the run's transaction itself, or tried to (pgstore: a
// COMMIT or ROLLBACK sent as SQL, which the store refuses to send): the
// record is not written, and the run is rolled back (or is what the
// handler's end made of it). The store's refusal of such a statement
// matches it too. It is not a store failure: the engine answers 500
// transaction-ended and logs it.
var ErrTxEnded = errors.New("idem: the handler ended the run's transaction itself; the engine commits or rolls it back")

// TxStore is a [Store] that commits a handler's own database writes together
// with its result, in one transaction that also holds the key's claim: one
// commit per first request, and a crash, a cancelled request or a handler
// error leaves nothing behind.
//
// When the engine's store implements it, a protected request goes like
// this. [TxStore.AcquireRun] answers a replay, a mismatch or a conflict as
// [Store.Acquire] does, or claims the key inside a new transaction and
// returns it open ([RunTx]). The handler runs with the context of
// [RunTx.Context], through which it reaches the transaction (package
// pgstore: pgstore.Tx). A storable response is written into the same
// transaction by [RunTx.Commit], which commits the claim, the handler's
// writes and the record at once; only then is the client answered.
// Everything else ends in [RunTx.Rollback], which is the release: a handler
// error, no response, a status that is not stored, a panic, a request
// cancelled before the handler answered, a reconciler's refusal. (A
// storable answer whose client has gone meanwhile is committed: the
// client's retry is answered it.) A rolled-back claim
// leaves no trace, so a retry runs at once.
//
// # The claim
//
// A claim is held by its open transaction and by nothing else: it is not
// committed, so it needs no lease deadline written anywhere. While it is
// held, every other AcquireRun (and Acquire) of the key answers
// [OutcomeConflict] at once, without waiting for the transaction (pgstore:
// pg_try_advisory_xact_lock on a hash of the key, taken before anything of
// the key's is written, so no statement ever waits on it). The engine
// neither extends such a claim ([Store.Extend], the heartbeat) nor
// releases, completes or extends it through the plain [Store] methods; it
// only commits or rolls back the transaction.
//
// What fences a frozen owner (a process stopped, or cut off, with its
// transaction open) is the store: it must end a claim whose owner has sent
// nothing for longer than the request's Lease ([AcquireRequest.Lease], the
// operation's lock), rolling the transaction back (pgstore sets
// idle_in_transaction_session_timeout to the lease for the transaction).
// Until then a duplicate is answered 409; afterwards the key is free and a
// retry claims it. The owner that wakes finds its transaction gone: its
// next statement fails, and its Commit commits nothing and returns
// [ErrNotOwner], so its client is answered what the key stands for now.
//
// A live owner keeps its claim for as long as its handler runs, however
// long the handler spends outside the database (a slow call to another
// system): the engine keeps a [LiveRunTx] alive every third of the lease
// while the handler runs, as the heartbeat extends a plain store's lease.
// The lock means what it means on every store: how long a dead or frozen
// owner can hold a key.
//
// A claim's fence ([Acquisition.Fence]) is above the fence of every earlier
// claim of the key, committed or not (pgstore: the transaction's id), so
// that a system the handler calls can refuse a stale owner's late writes;
// it is not 1 for a first run. Since a claim that ended uncommitted left
// nothing, the next claim is [OutcomeFirstRun], not [OutcomeRecovered]:
// Recovered is answered only for an in-progress record that
// [Store.Acquire] committed and whose lease lapsed. A handler whose calls
// to other systems must not repeat after a crash journals them as steps
// ([StepStore]), which commit on their own.
//
// # Steps
//
// A TxStore that is a [StepStore] takes the owner token of an open claim in
// LoadSteps and BeginStep. LoadSteps returns the entries journaled for the
// key and the claim's fingerprint; a step's entry commits in the step's own
// transaction, checked against the claim being held by the run's open
// transaction at that moment (pgstore: the run's session holds the key's
// advisory lock), so that a run whose claim was lost journals nothing.
//
// # Durability
//
// Commit returns nil only once the commit is durable on the server (flushed
// to its disk, and to the synchronous standbys it is configured with),
// whatever the server's default for the store's sessions: pgstore sets
// synchronous_commit = on for its transactions when the server says off. A
// store that cannot ensure it refuses the configuration with an error
// matching [ErrStoreMisconfigured] that names the setting.
//
// # Cost
//
// A store should answer a replay, a mismatch, and a conflict with a
// committed in-progress record by one read that writes nothing (no row
// lock, no transaction id), and take a claim in one more round trip (the
// transaction's begin sent with the claim); the completion goes with the
// commit. pgstore: a read-only SELECT, then BEGIN + the claim, the
// handler's statements, the completion + COMMIT.
type TxStore interface {
	Store
	// AcquireRun runs the acquire transition of req for a run that
	// commits in a transaction of its own. For [OutcomeReplay],
	// [OutcomeMismatch] and [OutcomeConflict] it answers as
	// [Store.Acquire] and returns a nil RunTx; a conflict's Remaining is a
	// hint for the duplicate's Retry-After, at most req.Lease (a store
	// that cannot tell how long an open claim will last answers a short
	// one; pgstore: one second). For [OutcomeFirstRun] and
	// [OutcomeRecovered] it returns the RunTx that holds the claim, open,
	// with a fence above every earlier claim's of the key; the caller must
	// end it with Commit or Rollback.
	//
	// ctx is the request's, detached from its cancellation and bounded by
	// the store timeout; the RunTx it returns outlives it. An error is a
	// store failure (matching [ErrStoreUnavailable], and
	// [ErrStoreMisconfigured] for a set-up the store cannot keep its
	// promise on), with nothing held: the engine answers 503 without
	// running the handler.
	AcquireRun(ctx context.Context, req AcquireRequest) (Acquisition, RunTx, error)
}

// RunTx is the open transaction of one protected run, which holds its key's
// claim (see [TxStore]). Its methods are called by one goroutine at a time:
// the handler uses the transaction (through Context) and then the engine
// commits or rolls it back, never both at once.
type RunTx interface {
	// Context returns ctx carrying the transaction, for the handler.
	Context(ctx context.Context) context.Context
	// Commit writes rec as the key's result, kept for retention, into the
	// transaction and commits it, with the claim and the handler's writes:
	// all of them become visible at once, durably (see [TxStore]), or none.
	// It returns nil once committed; [ErrNotOwner] when the claim was lost
	// before (the store or the server ended the transaction: a frozen
	// owner's, see [TxStore]), nothing committed; otherwise an error
	// matching [ErrStoreUnavailable], when the commit is known not to have
	// happened or its fate could not be learned (and also
	// [ErrStoreMisconfigured] when the database refused the completion for
	// how it is set up: a constraint, a trigger, a value too large), or
	// [ErrTxEnded] when the handler ended the transaction itself or tried
	// to, in which case no record is written. A commit whose answer was
	// lost is looked up before Commit returns, so that nil is returned if it
	// did commit. If the handler's own statements left the transaction
	// unable to commit (an error of its, which it answered with a stored
	// status), the store may roll back and store rec on its own, provided
	// no other claim took the key meanwhile (ErrNotOwner otherwise): the
	// handler's writes are then gone, as the database decided. rec is
	// shared with the response being sent, as in [Store.Complete]. The
	// transaction is over when Commit returns, whatever it returns.
	Commit(ctx context.Context, rec *Record, retention time.Duration) error
	// Rollback rolls the transaction back: nothing of the run is kept, and
	// the key is free at once. It is the release of a claim. It does
	// nothing after Commit, or when the transaction is already over; an
	// error is reported, as the server rolls back a transaction whose
	// connection is gone.
	Rollback(ctx context.Context) error
}

// LiveRunTx is a [RunTx] whose claim the store ends once its owner has been
// silent for the lease (pgstore and mysqlstore: the server's idle timeout of
// the transaction's session), and which its owner therefore keeps alive
// while the handler runs.
type LiveRunTx interface {
	RunTx
	// KeepAlive tells the store that the run's owner is alive, so that the
	// claim lasts another lease from now. The engine calls it every third
	// of the lease while the handler runs, on another goroutine than the
	// handler's, which may be using the transaction at that moment:
	// KeepAlive takes turns with the handler's statements, and sends
	// nothing while one of them (or rows it has not closed) holds the
	// connection. It is never called concurrently with itself, Commit or
	// Rollback. It returns [ErrNotOwner] once the claim is known lost (the
	// store ended the transaction), and nil or a store failure otherwise.
	KeepAlive(ctx context.Context) error
}

package idemstore

import (
	"context"
	"time"
)

// StepStore is a [Store] that keeps the journal of a run's steps (idem.Step):
// the result of every step that succeeded, under the run's record, so that
// a re-run of the same request (a takeover after a crash, a retry after a
// release) returns those results instead of running the steps again.
//
// The journal belongs to the record's key and fingerprint: a record created
// anew with the same fingerprint (after a release) finds it, one with
// another fingerprint does not. An entry is written only by the run that
// owns the lease (its token and fence), checked atomically with the write,
// as a completion is; it expires no earlier than the operation's retention
// after it was written.
//
// Both stores of this module implement it; a store that does not makes
// idem.Step fail with idem.ErrStepsUnsupported before it runs anything.
type StepStore interface {
	Store
	// LoadSteps returns the journal of key's in-progress record, which
	// token owns: step name to stored result. It returns no entries
	// written for another fingerprint, ErrNotOwner when token does not own
	// the record, and a *StoreError on a failure of the store.
	LoadSteps(ctx context.Context, key, token string) (map[string][]byte, error)
	// BeginStep begins one step of the run that owns key's lease with
	// token and fence. The step's function runs with [StepTx.Context]; its
	// result is journaled by [StepTx.Commit].
	BeginStep(ctx context.Context, key, token string, fence int64) (StepTx, error)
}

// StepTx is one step of a run (see [StepStore]).
type StepTx interface {
	// Context returns ctx for the step's function: a store that can
	// commit the step's own writes with its journal entry (pgstore: a
	// transaction of the step's own) carries it here.
	Context(ctx context.Context) context.Context
	// Commit journals result as step name's, kept for at least retention,
	// if the run's token and fence still own the key's in-progress lease
	// (checked atomically with the write), and commits the step's own
	// writes with it. It returns ErrNotOwner when refused (the step's own
	// writes, if the store has them, are rolled back), or a *StoreError.
	Commit(ctx context.Context, name string, result []byte, retention time.Duration) error
	// Rollback undoes the step's own writes, if the store has them. It does
	// nothing after Commit.
	Rollback(ctx context.Context) error
}

package idem

import "github.com/idemgen/idemgen/runtime/idemop"

// The storage policy's rules are idemop's (the generator applies the same):
// these are their names in package idem.

// DefaultFinal is what an [Operation] whose Final is nil stores and
// replays: every 2xx, 3xx and 4xx answer, except the statuses that are
// never final (see [NeverFinal]).
func DefaultFinal() []string { return idemop.DefaultFinal() }

// NeverFinal returns the statuses that are never stored, whatever an
// operation's policy says: 408, 409, 425 and 429 (see [idemop.NeverFinal]).
func NeverFinal() []int { return idemop.NeverFinal() }

// FinalError is one problem of an operation's storage policy: Field names
// the entry ("final[2]", "transient[0]").
type FinalError = idemop.FinalError

// CheckFinal reports what is wrong with a storage policy (an [Operation]'s
// Final and Transient): every problem, joined, each a *[FinalError]; nil
// when there is none (see [idemop.CheckFinal]). [NewEngineFor] and [Do]
// refuse a policy it refuses.
func CheckFinal(final []string, transient []int) error { return idemop.CheckFinal(final, transient) }

package sqlfamily

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Store runs the methods of idemstore.Store, TxStore and StepStore as
// every SQL store runs them: it checks the arguments, refuses acquires
// while the store is misconfigured (Core), answers a request of another
// payload than a run of this process holds, reads what a statement on the
// owner's row changed, and keeps the open runs (R, the store's run) for
// the steps they journal. What the statements are, and how they are sent,
// is the store's Driver. A store's methods delegate to it.
type Store[R Run] struct {
	*Core
	Runs   Runs[R]
	Driver Driver[R]
}

// Driver is what a store sends to its database for the methods of Store;
// durations are in the dialect's unit, and the arguments are checked.
type Driver[R Run] interface {
	// Acquire claims req's key, or answers what its record holds.
	Acquire(ctx context.Context, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, error)
	// AcquireRun claims req's key inside a transaction, which the run
	// returned holds, or answers what its record holds.
	AcquireRun(ctx context.Context, req idemstore.AcquireRequest, lease int64) (idemstore.Acquisition, idemstore.RunTx, error)
	// Complete, Release and Extend change the in-progress record of key
	// that token owns, and return how many rows they changed.
	Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention int64) (rows int64, err error)
	Release(ctx context.Context, key, token string) (rows int64, err error)
	Extend(ctx context.Context, key, token string, lease int64) (rows int64, err error)
	// Steps reads the step journal of key (Dialect.Steps): of run, the
	// open run that token owns, when there is one (not nil), and otherwise
	// of the committed in-progress record that token owns.
	Steps(ctx context.Context, key, token string, run R) (StepRows, error)
	// BeginStep begins a step's transaction, of run when there is one, as
	// Steps.
	BeginStep(ctx context.Context, key, token string, fence int64, run R) (idemstore.StepTx, error)

	// CreateSchema runs records and steps, the dialect's Schema and
	// StepsSchema for the store's tables (Table.Create).
	CreateSchema(ctx context.Context, records, steps string) error
	// ServerProblems and TableProblems are what Check finds wrong with the
	// server's settings and the table (CheckWith).
	ServerProblems(ctx context.Context) ([]string, error)
	TableProblems(ctx context.Context) ([]string, error)
	// PurgeRecords and PurgeSteps delete one batch of at most n expired
	// records, or journal entries (PurgeAll).
	PurgeRecords(ctx context.Context, n int) (int64, error)
	PurgeSteps(ctx context.Context, n int) (int64, error)
}

// StepRows are the rows of a read of the step journal, which the reader
// closes.
type StepRows interface {
	Rows
	Close()
}

// NewStore returns a store of dialect d over driver, with the options'
// defaults.
func NewStore[R Run](d *Dialect, driver Driver[R]) *Store[R] {
	s := &Store[R]{Core: NewCore(d), Driver: driver}
	s.Core.Check, s.Core.Purge = s.Check, s.Purge
	return s
}

// Apply applies opts, a store's options, to s, in order.
func Apply[S any, O ~func(S)](s S, opts []O) {
	for _, opt := range opts {
		opt(s)
	}
}

// CreateSchema is a store's CreateSchema: the dialect's Schema and
// StepsSchema, for the store's tables.
func (s *Store[R]) CreateSchema(ctx context.Context) error {
	if s.TableErr != nil {
		return s.TableErr
	}
	records, steps := s.Table.Create(s.Dialect.Schema, s.Dialect.StepsSchema)
	if err := s.Driver.CreateSchema(ctx, records, steps); err != nil {
		return s.Dialect.StoreError("create schema", err)
	}
	return nil
}

// Check is a store's Check (CheckWith): the problems of the server's
// settings, then the table's.
func (s *Store[R]) Check(ctx context.Context) error {
	return s.CheckWith(ctx, s.Driver.ServerProblems, s.Driver.TableProblems)
}

// Purge is a store's Purge (PurgeAll): the expired records, then the
// journal's expired entries.
func (s *Store[R]) Purge(ctx context.Context) (int64, error) {
	return s.PurgeAll(ctx, s.Driver.PurgeRecords, s.Driver.PurgeSteps)
}

// Acquire is idemstore.Store's.
func (s *Store[R]) Acquire(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, error) {
	lease, err := s.Admit(ctx, req)
	if err != nil {
		return idemstore.Acquisition{}, err
	}
	return s.Driver.Acquire(ctx, req, lease)
}

// AcquireRun is idemstore.TxStore's. A key whose claim a run of this
// process holds for another payload is answered a mismatch at once.
func (s *Store[R]) AcquireRun(ctx context.Context, req idemstore.AcquireRequest) (idemstore.Acquisition, idemstore.RunTx, error) {
	lease, err := s.Admit(ctx, req)
	if err != nil {
		return idemstore.Acquisition{}, nil, err
	}
	if s.Runs.OtherPayload(req.Key, req.Fingerprint) {
		return idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}, nil, nil
	}
	return s.Driver.AcquireRun(ctx, req, lease)
}

// Complete is idemstore.Store's.
func (s *Store[R]) Complete(ctx context.Context, key, token string, rec *idemstore.Record, retention time.Duration) error {
	ret, err := s.CheckComplete(key, token, rec, retention)
	if err != nil {
		return err
	}
	rows, err := s.Driver.Complete(ctx, key, token, rec, ret)
	return s.Changed("complete", rows, err)
}

// Release is idemstore.Store's.
func (s *Store[R]) Release(ctx context.Context, key, token string) error {
	if err := s.CheckArgs(key, token); err != nil {
		return err
	}
	rows, err := s.Driver.Release(ctx, key, token)
	return s.Changed("release", rows, err)
}

// Extend is idemstore.Store's.
func (s *Store[R]) Extend(ctx context.Context, key, token string, lease time.Duration) error {
	l, err := s.CheckExtend(key, token, lease)
	if err != nil {
		return err
	}
	rows, err := s.Driver.Extend(ctx, key, token, l)
	return s.Changed("extend", rows, err)
}

// LoadSteps is idemstore.StepStore's.
func (s *Store[R]) LoadSteps(ctx context.Context, key, token string) (map[string][]byte, error) {
	if err := s.CheckArgs(key, token); err != nil {
		return nil, err
	}
	run, open := s.Runs.Of(key, token)
	rows, err := s.Driver.Steps(ctx, key, token, run)
	if err != nil {
		return nil, s.Dialect.StoreError("steps", err)
	}
	defer rows.Close()
	return s.Dialect.Steps(rows, open)
}

// BeginStep is idemstore.StepStore's.
func (s *Store[R]) BeginStep(ctx context.Context, key, token string, fence int64) (idemstore.StepTx, error) {
	if err := s.CheckArgs(key, token); err != nil {
		return nil, err
	}
	run, _ := s.Runs.Of(key, token)
	st, err := s.Driver.BeginStep(ctx, key, token, fence, run)
	if err != nil {
		return nil, s.Dialect.StoreError("begin step", err)
	}
	return st, nil
}

package sqlfamily

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Rows are the rows of a query, as pgx's and database/sql's both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Steps reads the rows (name, result) of a read of the step journal: of an
// open claim's (claimed), whose steps are rows of their own, or of the
// committed in-progress record that the token owns, joined to its steps,
// where no row means that the token owns no such record and one row with
// a NULL name that the record has no step. It returns the journal, or
// [idemstore.ErrNotOwner].
func (d *Dialect) Steps(rows Rows, claimed bool) (map[string][]byte, error) {
	var steps map[string][]byte
	for rows.Next() {
		var name *string
		var result []byte
		if err := rows.Scan(&name, &result); err != nil {
			return nil, d.StoreError("steps", err)
		}
		if steps == nil {
			steps = make(map[string][]byte)
		}
		if name != nil {
			if result == nil {
				result = []byte{}
			}
			steps[*name] = result
		}
	}
	if err := rows.Err(); err != nil {
		return nil, d.StoreError("steps", err)
	}
	switch {
	case steps != nil:
		return steps, nil
	case claimed:
		return map[string][]byte{}, nil
	}
	return nil, idemstore.ErrNotOwner
}

// Step is a step's transaction as the driver runs it.
type Step interface {
	// Context returns ctx, in which the step's function finds the step's
	// transaction (the store's Tx).
	Context(ctx context.Context) context.Context
	// Save writes the step's journal entry, kept for ret (in the
	// dialect's unit), if the run still owns its record or claim; saved
	// is false when it does not.
	Save(ctx context.Context, name string, result []byte, ret int64) (saved bool, err error)
	Commit(ctx context.Context) error
	// Rollback rolls the step back; nil when it has ended already.
	Rollback(ctx context.Context) error
}

// StepTx is a step's idemstore.StepTx: S, the store's step, whose pointer
// P runs it (Step), ended as CommitStep and RollbackStep say. S is held
// by value, so that a step costs one allocation.
type StepTx[S any, P interface {
	*S
	Step
}] struct {
	Dialect *Dialect
	Step    S
}

// Context implements idemstore.StepTx.
func (t *StepTx[S, P]) Context(ctx context.Context) context.Context {
	return P(&t.Step).Context(ctx)
}

// Commit implements idemstore.StepTx (CommitStep).
func (t *StepTx[S, P]) Commit(ctx context.Context, name string, result []byte, retention time.Duration) error {
	return t.Dialect.CommitStep(ctx, P(&t.Step), name, result, retention)
}

// Rollback implements idemstore.StepTx (RollbackStep).
func (t *StepTx[S, P]) Rollback(ctx context.Context) error {
	return t.Dialect.RollbackStep(ctx, P(&t.Step))
}

// CommitStep is a StepTx's Commit: the journal entry, written if the run
// still owns the record, then COMMIT; an entry refused
// ([idemstore.ErrNotOwner]) or failing rolls the step back.
func (d *Dialect) CommitStep(ctx context.Context, st Step, name string, result []byte, retention time.Duration) error {
	ret, err := d.Duration("retention", retention, idemstore.DefaultRetention)
	if err != nil {
		_ = st.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if result == nil {
		result = []byte{} // the column is NOT NULL
	}
	saved, err := st.Save(ctx, name, result, ret)
	switch {
	case err != nil:
		_ = st.Rollback(context.WithoutCancel(ctx))
		return d.StoreError("step", err)
	case !saved:
		if err := st.Rollback(context.WithoutCancel(ctx)); err != nil {
			return d.StoreError("step", err)
		}
		return idemstore.ErrNotOwner
	}
	if err := st.Commit(ctx); err != nil {
		return d.StoreError("step", err)
	}
	return nil
}

// RollbackStep is a StepTx's Rollback.
func (d *Dialect) RollbackStep(ctx context.Context, st Step) error {
	if err := st.Rollback(ctx); err != nil {
		return d.StoreError("rollback step", err)
	}
	return nil
}

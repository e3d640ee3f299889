package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Default limits of a run's steps (WithStepLimits).
const (
	defaultMaxSteps    = 64       // steps journaled per run
	defaultMaxStepSize = 64 << 10 // bytes of one step's result, as JSON
)

// maxStepName is the longest step name, in bytes.
const maxStepName = 200

// Errors of [Step] and [DerivedKey], which need the protected run of their
// context.
var (
	// ErrNoRun is returned by [DerivedKey] for a context that does not come
	// from a protected run (no key, fail-open, or not under the engine at
	// all).
	ErrNoRun = errors.New("idem: not in a protected run")
	// ErrStepsUnsupported is returned by [Step] in a protected run whose
	// store does not implement [idemstore.StepStore]: the step is not run,
	// since nothing would keep a re-run from running it again.
	ErrStepsUnsupported = errors.New("idem: the store keeps no step journal (it does not implement idemstore.StepStore)")
	// ErrStepLimit is matched (errors.Is) by the error of a [Step] that
	// would exceed the run's limits ([WithStepLimits]): one step too many
	// (the step is not run) or a result too large to journal (the step ran;
	// its result is not journaled and, on a store with step transactions,
	// its writes are rolled back).
	ErrStepLimit = errors.New("idem: step limit exceeded")
	// ErrStepType is matched (errors.Is) by a [*StepTypeError].
	ErrStepType = errors.New("idem: step journaled as another type")
)

// stepLimits are WithStepLimits's; zero fields mean the defaults.
type stepLimits struct {
	count, size int
}

// WithStepLimits bounds the steps of one run: at most steps steps (a
// [Step] beyond them fails with ErrStepLimit before it runs), and at most
// size bytes of a step's result as JSON (a larger one fails with
// ErrStepLimit after it ran, its result not journaled). The defaults are 64
// steps and 64 KiB; a value <= 0 keeps the default.
func WithStepLimits(steps, size int) Option {
	return func(c *config) { c.steps = stepLimits{count: steps, size: size} }
}

func (s stepLimits) maxCount() int {
	if s.count > 0 {
		return s.count
	}
	return defaultMaxSteps
}

func (s stepLimits) maxSize() int {
	if s.size > 0 {
		return s.size
	}
	return defaultMaxStepSize
}

// Step runs fn as the step name of the protected run whose context ctx is,
// and journals its result under the run's record when it succeeds (see
// [idemstore.StepStore]). On a re-run of the same request (a takeover after the
// process died, a retry after a release) a step found in the journal is not
// run again: Step returns its journaled result. A handler thus resumes
// where it stopped, each finished step's effect happening once.
//
// The result is journaled as JSON (encoding/json) and returned decoded, on
// the first run as on a re-run, so both see the same value. The journal
// records T's JSON shape with it: read as a type of another shape (the
// step's type changed between deploys), Step returns a *[StepTypeError]
// (matching [ErrStepType]) and the zero T, never a result decoded into
// the wrong fields; fn is not run again. fn's error is
// returned as is and journals nothing (a re-run runs the step again), as
// does a panic, which goes on after the step is undone.
//
// name identifies the step within the run: one name, one effect
// ("reserve", "charge/"+line.ID). A second Step of a name in the same run
// returns the first one's result; steps of different names may run
// concurrently. A name is 1 to 200 bytes of printable ASCII. Steps may
// nest: an inner step's name is within the outer one's.
//
// The journal write is fenced like a completion: a run whose lease was
// taken over cannot write a step (Step returns an error matching
// idemstore.ErrNotOwner, and the handler should stop). A store that has
// completions acknowledged by replicas (redisstore) has journal entries
// acknowledged too: when none acknowledges in time, the step ran and is
// journaled on the master, but Step returns an error matching
// ErrUnreplicated (and no result), since a failover could lose the entry
// and a re-run would run the step again; the handler should stop, or go
// on knowing it. A later Step of that name in the same run returns the
// result. What a step cannot cover: an
// effect that landed but whose answer fn never got (the process died, the
// call timed out) is run again on the re-run. Make such calls with a
// derived key (generated clients do by themselves, [DerivedKey] for
// others), so that the downstream recognises the repeat.
//
// fn runs with the step's context: client calls made in it derive their
// keys within the step, and with a store that has step transactions
// (pgstore) it carries the step's own transaction, which commits with the
// journal entry (pgstore.Tx(ctx) inside fn is the step's).
//
// Outside a protected run (no key, fail-open, not under the engine) Step
// runs fn and journals nothing: no re-run of the request is protected
// there either. In a run whose store does not implement idemstore.StepStore it
// returns ErrStepsUnsupported without running fn. More steps or a larger
// result than [WithStepLimits] allows fail with an error matching
// ErrStepLimit.
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	s := scopeFrom(ctx)
	if s == nil {
		return fn(ctx)
	}
	raw, err := s.step(ctx, name, stepTypeOf(reflect.TypeFor[T]()), func(ctx context.Context) ([]byte, error) {
		r, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("idem: step %q: result: %w", name, err)
		}
		return b, nil
	})
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("idem: step %q: journaled result does not decode into %T: %w", name, v, err)
	}
	return v, nil
}

// journal is a run's view of its step journal: loaded from the store at
// the first step, and the results of the steps since.
type journal struct {
	mu      sync.Mutex           // guards everything below
	loaded  bool                 // entries holds the store's journal
	entries map[string][]byte    // results by full step name
	running map[string]*stepSlot // steps of this run under way or done, by full name
}

// stepSlot serialises the steps of one name within a run.
type stepSlot struct {
	mu sync.Mutex
}

// checkStepName reports what is wrong with a step name.
func checkStepName(name string) error {
	if name == "" || len(name) > maxStepName {
		return fmt.Errorf("idem: step name %q: want 1 to %d bytes", name, maxStepName)
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("idem: step name %q: byte %d is not printable ASCII", name, i)
		}
	}
	return nil
}

// stepSep joins the names of nested steps; no name holds it.
const stepSep = "\x1f"

// step runs fn as step name of s's run, or returns its journaled result,
// read as type st: the result's JSON, journaled with st's header.
func (s *runScope) step(ctx context.Context, name string, st *stepType, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	if err := checkStepName(name); err != nil {
		return nil, err
	}
	full := name
	if s.path != "" {
		full = s.path + stepSep + name
	}
	r := s.run
	l := r.l
	ss, ok := l.e.store.(idemstore.StepStore)
	if !ok {
		return nil, fmt.Errorf("%w (step %q)", ErrStepsUnsupported, name)
	}
	j := &r.journal
	slot, err := j.reserve(ctx, l, ss, full, l.e.cfg.steps.maxCount())
	if err != nil {
		return nil, fmt.Errorf("idem: step %q: %w", name, err)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if journaled, ok := j.result(full); ok {
		return st.unwrap(strings.ReplaceAll(full, stepSep, "/"), journaled)
	}

	tx, err := ss.BeginStep(l.e.deadlines.Context(ctx), l.k.storageKey, l.token, l.info.Fence)
	if err != nil {
		return nil, fmt.Errorf("idem: step %q: begin: %w", name, storeFailure("step", err))
	}
	settled := false
	defer func() {
		if !settled { // fn panicked: undo the step, and let the panic go on
			_ = tx.Rollback(l.e.deadlines.Context(ctx))
		}
	}()
	raw, err := fn(tx.Context(context.WithValue(ctx, runKey{}, s.child(name))))
	settled = true
	if err == nil && len(raw) > l.e.cfg.steps.maxSize() {
		err = fmt.Errorf("idem: step %q: result of %d bytes: %w (at most %d bytes as JSON, see WithStepLimits)", name, len(raw), ErrStepLimit, l.e.cfg.steps.maxSize())
	}
	if err != nil {
		if rerr := tx.Rollback(l.e.deadlines.Context(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("idem: step %q: rollback: %w", name, rerr))
		}
		return nil, err
	}
	journaled := st.wrap(raw)
	switch err := tx.Commit(l.e.deadlines.Context(ctx), full, journaled, opRetention(l.k.op)); {
	case errors.Is(err, idemstore.ErrNotOwner):
		return nil, fmt.Errorf("idem: step %q: result not journaled, the run's lease was taken over: %w", name, err)
	case errors.Is(err, idemstore.ErrUnreplicated):
		// Journaled on the master, which a later Step of the name in
		// this run reads as done; the caller learns that a failover may
		// still lose it.
		j.mu.Lock()
		j.entries[full] = journaled
		j.mu.Unlock()
		return nil, fmt.Errorf("idem: step %q: ran and journaled, but no replica acknowledged the entry in time (a failover now would make a re-run run the step again): %w", name, err)
	case err != nil:
		return nil, fmt.Errorf("idem: step %q: journal: %w", name, storeFailure("step", err))
	}
	j.mu.Lock()
	j.entries[full] = journaled
	j.mu.Unlock()
	return raw, nil
}

// reserve loads the journal once, and returns the slot of step full,
// counting it against max unless it is journaled or under way already.
func (j *journal) reserve(ctx context.Context, l *lease, ss idemstore.StepStore, full string, max int) (*stepSlot, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.loaded {
		entries, err := ss.LoadSteps(l.e.deadlines.Context(ctx), l.k.storageKey, l.token)
		switch {
		case errors.Is(err, idemstore.ErrNotOwner):
			return nil, fmt.Errorf("journal not loaded, the run's lease was taken over: %w", err)
		case err != nil:
			return nil, fmt.Errorf("journal not loaded: %w", storeFailure("steps", err))
		}
		if entries == nil {
			entries = make(map[string][]byte)
		}
		j.entries, j.running, j.loaded = entries, make(map[string]*stepSlot), true
	}
	if slot := j.running[full]; slot != nil {
		return slot, nil
	}
	if _, done := j.entries[full]; !done {
		n := len(j.entries)
		for name := range j.running {
			if _, done := j.entries[name]; !done {
				n++
			}
		}
		if n >= max {
			return nil, fmt.Errorf("%w: the run has %d steps already (at most %d, see WithStepLimits)", ErrStepLimit, n, max)
		}
	}
	slot := &stepSlot{}
	j.running[full] = slot
	return slot, nil
}

// result returns the journaled result of step full.
func (j *journal) result(full string) ([]byte, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	raw, ok := j.entries[full]
	return raw, ok
}

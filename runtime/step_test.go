package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
	"github.com/idemgen/idemgen/runtime/internal/memhooks"
)

// counted returns a step function that counts its runs and returns v.
func counted[T any](n *atomic.Int64, v T) func(context.Context) (T, error) {
	return func(context.Context) (T, error) {
		n.Add(1)
		return v, nil
	}
}

// TestStepResumesAfterTakeover: a run journals two steps and stalls; the
// run that takes its lease over gets both results without running them,
// runs the third, and the stale run can journal nothing more.
func TestStepResumesAfterTakeover(t *testing.T) {
	var skew atomic.Int64 // the store's clock, ahead of the wall clock
	store := memstore.New(memstore.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
	op := &idemop.Operation{ID: "CreateOrder", Lock: time.Second}
	ctx := context.Background()
	var reserve, charge, ship atomic.Int64
	type order struct {
		Charge string `json:"charge"`
		Cents  int    `json:"cents"`
	}
	stalled, resume, staleErr := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, _, _ = idem.Do(ctx, store, op, "order-1", nil, func(ctx context.Context) ([]byte, error) {
			if _, err := idem.Step(ctx, "reserve", counted(&reserve, "r-1")); err != nil {
				return nil, err
			}
			if _, err := idem.Step(ctx, "charge", counted(&charge, order{Charge: "ch_1", Cents: 500})); err != nil {
				return nil, err
			}
			close(stalled)
			<-resume
			_, err := idem.Step(ctx, "ship", counted(&ship, true))
			staleErr <- err
			return nil, err
		}, idem.WithHeartbeat(false))
	}()
	<-stalled
	skew.Add(int64(2 * time.Second))
	res, replayed, err := idem.Do(ctx, store, op, "order-1", nil, func(ctx context.Context) ([]byte, error) {
		if info, _ := idem.FromContext(ctx); !info.Recovered {
			t.Errorf("second run not a takeover: %+v", info)
		}
		r, err := idem.Step(ctx, "reserve", counted(&reserve, "r-2"))
		if err != nil {
			return nil, err
		}
		c, err := idem.Step(ctx, "charge", counted(&charge, order{Charge: "ch_2"}))
		if err != nil {
			return nil, err
		}
		if _, err := idem.Step(ctx, "ship", counted(&ship, true)); err != nil {
			return nil, err
		}
		return []byte(r + " " + c.Charge), nil
	})
	if err != nil || replayed || string(res) != "r-1 ch_1" {
		t.Fatalf("takeover = %q, %v, %v; want the first run's journaled results", res, replayed, err)
	}
	if reserve.Load() != 1 || charge.Load() != 1 || ship.Load() != 1 {
		t.Errorf("runs: reserve %d, charge %d, ship %d; want 1 each", reserve.Load(), charge.Load(), ship.Load())
	}
	close(resume)
	if err := <-staleErr; !errors.Is(err, idemstore.ErrNotOwner) {
		t.Errorf("stale run's step: %v, want ErrNotOwner", err)
	}
	if ship.Load() != 2 {
		t.Errorf("the stale run's step ran %d times in all; its fn runs, its journal write is refused", ship.Load())
	}
}

// TestStepErrorIsNotJournaled: a step that failed runs again on the next
// run; one that succeeded before a failed run does not.
func TestStepErrorIsNotJournaled(t *testing.T) {
	store := memstore.New()
	var a, b atomic.Int64
	fail := errors.New("provider down")
	runTwice(t, store, "order-1", func(ctx context.Context) []string {
		if _, err := idem.Step(ctx, "a", counted(&a, 1)); err != nil {
			t.Fatal(err)
		}
		_, err := idem.Step(ctx, "b", func(context.Context) (int, error) {
			if b.Add(1) == 1 {
				return 0, fail
			}
			return 2, nil
		})
		if b.Load() == 1 && !errors.Is(err, fail) {
			t.Errorf("failed step: %v", err)
		}
		return nil
	})
	if a.Load() != 1 || b.Load() != 2 {
		t.Errorf("runs: a %d, b %d; want a once (journaled), b twice (failed the first time)", a.Load(), b.Load())
	}
}

// TestStepCallsInASkippedStep: the calls a journaled step made on the first
// run do not shift the ordinals of the calls after it on a re-run, which
// skips the step.
func TestStepCallsInASkippedStep(t *testing.T) {
	store := memstore.New()
	op := &idemop.ClientOperation{ID: "CreateCharge"}
	s := &sentKeys{caller: idem.NewCaller()}
	first, second := runTwice(t, store, "order-1", func(ctx context.Context) []string {
		inStep, _ := idem.Step(ctx, "deposit", func(ctx context.Context) (string, error) {
			return s.call(t, ctx, op), nil
		})
		return []string{inStep, s.call(t, ctx, op)}
	})
	if len(s.keys) != 3 {
		t.Fatalf("calls made: %v; want the step's once, the other twice", s.keys)
	}
	if first[0] != second[0] || first[1] != second[1] || first[0] == first[1] {
		t.Errorf("first run %v, re-run %v", first, second)
	}
}

// TestStepLimits: a step beyond the count is not run; a result beyond the
// size is not journaled; both match ErrStepLimit and say the limit.
func TestStepLimits(t *testing.T) {
	store := memstore.New()
	op := &idemop.Operation{ID: "CreateOrder"}
	var runs atomic.Int64
	_, _, err := idem.Do(context.Background(), store, op, "k", nil, func(ctx context.Context) ([]byte, error) {
		for _, name := range []string{"a", "b"} {
			if _, err := idem.Step(ctx, name, counted(&runs, 1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := idem.Step(ctx, "a", counted(&runs, 1)); err != nil {
			t.Errorf("a journaled step again: %v", err)
		}
		_, err := idem.Step(ctx, "c", counted(&runs, 1))
		if !errors.Is(err, idem.ErrStepLimit) || !strings.Contains(err.Error(), "at most 2") {
			t.Errorf("third step: %v", err)
		}
		_, err = idem.Step(ctx, "b2", counted(&runs, strings.Repeat("x", 100)))
		return nil, err
	}, idem.WithStepLimits(2, 64))
	if runs.Load() != 2 || !errors.Is(err, idem.ErrStepLimit) {
		t.Errorf("runs %d, err %v", runs.Load(), err)
	}

	_, _, err = idem.Do(context.Background(), store, op, "k2", nil, func(ctx context.Context) ([]byte, error) {
		_, err := idem.Step(ctx, "big", counted(&runs, strings.Repeat("x", 100)))
		return nil, err
	}, idem.WithStepLimits(0, 64))
	if !errors.Is(err, idem.ErrStepLimit) || !strings.Contains(err.Error(), "102 bytes") {
		t.Errorf("large result: %v", err)
	}
	_, _, err = idem.Do(context.Background(), store, op, "k3", nil, func(ctx context.Context) ([]byte, error) {
		_, err := idem.Step(ctx, "bad\nname", counted(&runs, 1))
		return nil, err
	})
	if err == nil || !strings.Contains(err.Error(), "printable") {
		t.Errorf("bad name: %v", err)
	}
}

// TestStepNeedsAStepStore: with a store that keeps no journal a step is
// not run; outside a protected run it is, journaling nothing.
func TestStepNeedsAStepStore(t *testing.T) {
	var runs atomic.Int64
	_, _, err := idem.Do(context.Background(), newMemStore(), &idemop.Operation{ID: "Op"}, "k", nil, func(ctx context.Context) ([]byte, error) {
		_, err := idem.Step(ctx, "a", counted(&runs, 1))
		return nil, err
	})
	if !errors.Is(err, idem.ErrStepsUnsupported) || runs.Load() != 0 {
		t.Errorf("memstore: %v, %d runs", err, runs.Load())
	}
	if v, err := idem.Step(context.Background(), "a", counted(&runs, 7)); err != nil || v != 7 || runs.Load() != 1 {
		t.Errorf("outside a run: %v, %v, %d runs", v, err, runs.Load())
	}
}

// TestStepTypeChangeAcrossDeploys: deploy 1 journals
// step "charge" as struct{Charge string} and its run fails (the key is
// released, the journal stays). Deploy 2 reads the step as
// struct{ChargeID string `json:"charge_id"`}, then as int: each read fails
// the run with a *StepTypeError naming the step and both types and saying
// what to do, instead of the zero value (before: a silent zero value for
// the struct, and an error for the int on every retry); the step's
// function is not run. A step renamed runs; once the key's journal is
// forgotten (as idemctl forget does on Redis), the request runs through.
func TestStepTypeChangeAcrossDeploys(t *testing.T) {
	store := memstore.New()
	op := &idemop.Operation{ID: "CreateOrder"}
	do := func(fn func(ctx context.Context) ([]byte, error)) error {
		_, _, err := idem.Do(context.Background(), store, op, "order-1", []byte(`{"amount":10}`), fn)
		return err
	}
	type deploy1 struct{ Charge string }
	if err := do(func(ctx context.Context) ([]byte, error) {
		if _, err := idem.Step(ctx, "charge", func(context.Context) (deploy1, error) { return deploy1{Charge: "ch_1"}, nil }); err != nil {
			return nil, err
		}
		return nil, errAgain
	}); !errors.Is(err, errAgain) {
		t.Fatalf("deploy 1: %v", err)
	}

	var runs atomic.Int64
	type deploy2 struct {
		ChargeID string `json:"charge_id"`
	}
	var got deploy2
	check := func(what string, err error, want string) {
		t.Helper()
		var te *idem.StepTypeError
		if !errors.As(err, &te) || !errors.Is(err, idem.ErrStepType) {
			t.Fatalf("%s: err %v, want a *StepTypeError", what, err)
		}
		if te.Step != "charge" || te.Journaled != "idem_test.deploy1" || te.Want != want {
			t.Errorf("%s: %+v", what, te)
		}
		for _, s := range []string{`step "charge"`, "idem_test.deploy1", want, "idemctl forget", `"charge/v2"`} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %s", what, err, s)
			}
		}
	}
	err := do(func(ctx context.Context) ([]byte, error) {
		v, err := idem.Step(ctx, "charge", counted(&runs, deploy2{ChargeID: "ch_2"}))
		got = v
		return nil, err
	})
	check("read as deploy2", err, "idem_test.deploy2")
	if got != (deploy2{}) {
		t.Errorf("read as deploy2 returned %+v with its error", got)
	}
	err = do(func(ctx context.Context) ([]byte, error) {
		_, err := idem.Step(ctx, "charge", counted(&runs, 7))
		return nil, err
	})
	check("read as int", err, "int")
	if runs.Load() != 0 {
		t.Fatalf("the step's function ran %d times on a journal of another type", runs.Load())
	}

	// Not stuck: the step renamed runs; the journal forgotten, so does the old name.
	if err := do(func(ctx context.Context) ([]byte, error) {
		_, err := idem.Step(ctx, "charge/v2", counted(&runs, 7))
		if err != nil {
			return nil, err
		}
		return nil, errAgain
	}); !errors.Is(err, errAgain) || runs.Load() != 1 {
		t.Fatalf("renamed step: %v, %d runs", err, runs.Load())
	}
	keys := store.StepKeys()
	if len(keys) != 1 {
		t.Fatalf("journals %v", keys)
	}
	store.Forget(keys[0])
	var n int
	if err := do(func(ctx context.Context) ([]byte, error) {
		v, err := idem.Step(ctx, "charge", counted(&runs, 7))
		n = v
		return []byte("ok"), err
	}); err != nil || n != 7 || runs.Load() != 2 {
		t.Fatalf("after the journal was forgotten: %v, %d, %d runs", err, n, runs.Load())
	}
}

// TestStepTypeOfOldEntries: a journal entry written before entries
// recorded their type (plain JSON) reads as before, unchecked; entries of
// one JSON shape read each other whatever their Go names.
func TestStepTypeOfOldEntries(t *testing.T) {
	store := memstore.New()
	op := &idemop.Operation{ID: "CreateOrder"}
	do := func(fn func(ctx context.Context) ([]byte, error)) error {
		_, _, err := idem.Do(context.Background(), store, op, "order-1", nil, fn)
		return err
	}
	type charge struct {
		ID    string `json:"id"`
		Cents int
	}
	if err := do(func(ctx context.Context) ([]byte, error) {
		if _, err := idem.Step(ctx, "charge", func(context.Context) (charge, error) { return charge{ID: "ch_1", Cents: 5}, nil }); err != nil {
			return nil, err
		}
		// As the version before wrote it: the JSON alone, journaled over
		// the entry by this run, which owns the key's lease.
		for _, k := range store.Keys() {
			e, _ := memhooks.Lookup(store, k)
			steps, err := store.LoadSteps(ctx, k, e.Token)
			if err != nil {
				return nil, err
			}
			for name, b := range steps {
				if !strings.HasPrefix(string(b), "idem-step/1 ") {
					return nil, fmt.Errorf("journaled %q", b)
				}
				_, plain, _ := strings.Cut(string(b), "\n")
				steps[name] = []byte(plain)
				tx, err := store.BeginStep(ctx, k, e.Token, e.Fence)
				if err != nil {
					return nil, err
				}
				if err := tx.Commit(ctx, name, steps[name], time.Hour); err != nil {
					return nil, err
				}
			}
			if again, err := store.LoadSteps(ctx, k, e.Token); err != nil || len(again) == 0 || fmt.Sprint(again) != fmt.Sprint(steps) {
				return nil, fmt.Errorf("journal rewritten as %q, %v; want %q", again, err, steps)
			}
			t.Logf("journal %s: %q", k, steps)
		}
		return nil, errAgain
	}); !errors.Is(err, errAgain) {
		t.Fatal(err)
	}
	var runs atomic.Int64
	type renamed struct { // same shape: names match without case, as encoding/json decodes
		Identifier string `json:"ID"`
		Amount     *int   `json:"cents"`
	}
	var got renamed
	if err := do(func(ctx context.Context) ([]byte, error) {
		v, err := idem.Step(ctx, "charge", counted(&runs, renamed{}))
		got = v
		if err != nil {
			return nil, err
		}
		// A second step of the same shape, under another Go name, in this run.
		if _, err := idem.Step(ctx, "again", counted(&runs, charge{ID: "x"})); err != nil {
			return nil, err
		}
		if _, err := idem.Step(ctx, "again", counted(&runs, renamed{})); err != nil {
			return nil, err
		}
		_, err = idem.Step(ctx, "again", counted(&runs, "a string"))
		if !errors.Is(err, idem.ErrStepType) {
			t.Errorf("step again read as string in the run that journaled it: %v", err)
		}
		return []byte("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if got.Identifier != "ch_1" || got.Amount == nil || *got.Amount != 5 || runs.Load() != 1 {
		t.Errorf("old entry read as %+v, %d runs; want ch_1 5, the step not run again", got, runs.Load())
	}
}

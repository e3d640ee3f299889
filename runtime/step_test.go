package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"

	"github.com/idemgen/idemgen/internal/redistest"
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
	m, rdb := redistest.Mini(t)
	store := redisstore.New(rdb)
	op := &idem.Operation{ID: "CreateOrder", Lock: time.Second}
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
	m.FastForward(2 * time.Second)
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
	_, rdb := redistest.Mini(t)
	store := redisstore.New(rdb)
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
	_, rdb := redistest.Mini(t)
	store := redisstore.New(rdb)
	op := &idem.ClientOperation{ID: "CreateCharge"}
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
	_, rdb := redistest.Mini(t)
	store := redisstore.New(rdb)
	op := &idem.Operation{ID: "CreateOrder"}
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
	_, _, err := idem.Do(context.Background(), newMemStore(), &idem.Operation{ID: "Op"}, "k", nil, func(ctx context.Context) ([]byte, error) {
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

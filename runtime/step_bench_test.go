package idem_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore/memstore"
)

// BenchmarkStepRun is one protected run (idem.Do on memstore, the
// in-memory store) that journals three steps of a small struct and
// completes: what a step costs the engine (journal entry, type header,
// decode), the store being memory.
func BenchmarkStepRun(b *testing.B) {
	store := memstore.New()
	op := &idemop.Operation{ID: "CreateOrder"}
	type charge struct {
		ID    string `json:"id"`
		Cents int    `json:"cents"`
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		_, _, err := idem.Do(ctx, store, op, "order-"+strconv.Itoa(i), nil, func(ctx context.Context) ([]byte, error) {
			for _, name := range []string{"reserve", "charge", "ship"} {
				if _, err := idem.Step(ctx, name, func(context.Context) (charge, error) { return charge{ID: "ch_1", Cents: 500}, nil }); err != nil {
					return nil, err
				}
			}
			return []byte("ok"), nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepResume is a run that finds its three steps journaled (a
// retry after a failed run): loading, checking the type and decoding.
func BenchmarkStepResume(b *testing.B) {
	store := memstore.New()
	op := &idemop.Operation{ID: "CreateOrder"}
	type charge struct {
		ID    string `json:"id"`
		Cents int    `json:"cents"`
	}
	ctx := context.Background()
	again := errors.New("again")
	run := func(fn func(context.Context) (charge, error)) error {
		_, _, err := idem.Do(ctx, store, op, "order-1", nil, func(ctx context.Context) ([]byte, error) {
			for _, name := range []string{"reserve", "charge", "ship"} {
				if _, err := idem.Step(ctx, name, fn); err != nil {
					return nil, err
				}
			}
			return nil, again
		})
		return err
	}
	if err := run(func(context.Context) (charge, error) { return charge{ID: "ch_1", Cents: 500}, nil }); !errors.Is(err, again) {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := run(func(context.Context) (charge, error) { return charge{}, errors.New("journaled: not run") }); !errors.Is(err, again) {
			b.Fatal(err)
		}
	}
}

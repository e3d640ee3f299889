package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

var errFailed = errors.New("the run failed after its step")

// TestClusterStepsFollowThePayloadAndType runs the payload and step-type attacks
// on a real Redis Cluster, for keys on every master: a request whose run
// journaled a step and failed (releasing its key) is retried and resumes
// (the step not run again, the same derived key); another payload under the
// released key derives another key and runs its own step; a read of a step
// as another type fails with a StepTypeError until Forget deletes the
// journal (forget.lua touches the record and the journal, one slot), after
// which the request runs through.
func TestClusterStepsFollowThePayloadAndType(t *testing.T) {
	rdb, prefix := redistest.Cluster(t)
	store := redisstore.New(rdb, redisstore.WithPrefix(prefix))
	op := &idemop.Operation{ID: "CreateOrder"}
	ctx := context.Background()
	type charge struct{ Charge string }

	// Two keys on each master.
	var keys []string
	perMaster := map[string]int{}
	for i := 0; len(keys) < 6 && i < 1000; i++ {
		key := fmt.Sprint("order-", i)
		m, err := rdb.MasterForKey(ctx, prefix+":"+idemstore.RecordKey(op.ID, "", key))
		if err != nil {
			t.Fatal(err)
		}
		if addr := m.Options().Addr; perMaster[addr] < 2 {
			perMaster[addr]++
			keys = append(keys, key)
		}
	}
	if len(perMaster) < 3 || len(keys) < 6 {
		t.Fatalf("keys %v on masters %v: want two on each of three", keys, perMaster)
	}
	for _, key := range keys {
		var runs atomic.Int64
		run := func(payload string, fn func(ctx context.Context) (string, error)) (derived string, err error) {
			_, _, err = idem.Do(ctx, store, op, key, []byte(payload), func(ctx context.Context) ([]byte, error) {
				var err error
				derived, err = fn(ctx)
				if err != nil {
					return nil, err
				}
				return nil, errFailed
			})
			return derived, err
		}
		step := func(ctx context.Context) (string, error) {
			if _, err := idem.Step(ctx, "charge", func(context.Context) (charge, error) {
				runs.Add(1)
				return charge{Charge: "ch"}, nil
			}); err != nil {
				return "", err
			}
			return idem.DerivedKey(ctx, "charge")
		}
		first, err := run(`{"amount":10}`, step)
		if !errors.Is(err, errFailed) {
			t.Fatalf("%s: first run: %v", key, err)
		}
		retry, err := run(`{"amount":10}`, step)
		if !errors.Is(err, errFailed) || retry != first || runs.Load() != 1 {
			t.Fatalf("%s: retry: %v, derived %s (first %s), step ran %d times; want the journal and the same key", key, err, retry, first, runs.Load())
		}
		other, err := run(`{"amount":20}`, step)
		if !errors.Is(err, errFailed) || other == first || runs.Load() != 2 {
			t.Fatalf("%s: another payload: %v, derived %s (first %s), step ran %d times; want its own key and step", key, err, other, first, runs.Load())
		}

		asInt := func(ctx context.Context) (string, error) {
			_, err := idem.Step(ctx, "charge", func(context.Context) (int, error) {
				runs.Add(1)
				return 7, nil
			})
			return "", err
		}
		_, err = run(`{"amount":20}`, asInt)
		var te *idem.StepTypeError
		if !errors.As(err, &te) || te.Step != "charge" || te.Want != "int" || !strings.Contains(te.Journaled, "charge") || runs.Load() != 2 {
			t.Fatalf("%s: read as int: %v (%+v), step ran %d times; want a StepTypeError and no run", key, err, te, runs.Load())
		}
		if err := store.Forget(ctx, idemstore.RecordKey(op.ID, "", key), false); err != nil {
			t.Fatalf("%s: Forget of the journal: %v", key, err)
		}
		if _, err := run(`{"amount":20}`, asInt); !errors.Is(err, errFailed) || runs.Load() != 3 {
			t.Fatalf("%s: read as int after Forget: %v, step ran %d times; want it run", key, err, runs.Load())
		}
	}
}

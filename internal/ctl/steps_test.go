package ctl

import (
	"context"
	"errors"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// TestForgetUnblocksAStepOfAnotherType is the step-type attack with
// the operator's way out, through idemctl: deploy 1 journals step "charge"
// as struct{Charge string} and its run fails (the key released, the
// journal kept); deploy 2 reads the step as int, and every retry fails
// with a StepTypeError that names idemctl forget. idemctl forget deletes
// the key's journal (before: "no record", the key stuck until the journal
// expired); the next retry runs the step and completes.
func TestForgetUnblocksAStepOfAnotherType(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		store := redisstore.New(b.rdb, redisstore.WithPrefix(b.prefix))
		op := &idemop.Operation{API: "shop", ID: "CreateOrder"}
		fail := errors.New("the order failed after its charge")
		do := func(fn func(ctx context.Context) ([]byte, error)) error {
			_, _, err := idem.Do(context.Background(), store, op, "order-1", []byte(`{"amount":10}`), fn)
			return err
		}
		if err := do(func(ctx context.Context) ([]byte, error) {
			if _, err := idem.Step(ctx, "charge", func(context.Context) (struct{ Charge string }, error) {
				return struct{ Charge string }{"ch_1"}, nil
			}); err != nil {
				return nil, err
			}
			return nil, fail
		}); !errors.Is(err, fail) {
			t.Fatalf("deploy 1: %v", err)
		}

		runs := 0
		asInt := func(ctx context.Context) ([]byte, error) {
			n, err := idem.Step(ctx, "charge", func(context.Context) (int, error) {
				runs++
				return 7, nil
			})
			if err != nil {
				return nil, err
			}
			return []byte{byte('0' + n)}, nil
		}
		for range 2 {
			err := do(asInt)
			if !errors.Is(err, idem.ErrStepType) || !strings.Contains(err.Error(), "idemctl forget") {
				t.Fatalf("deploy 2, read as int: %v; want a StepTypeError naming idemctl forget", err)
			}
		}
		if runs != 0 {
			t.Fatalf("the step ran %d times on a journal of another type", runs)
		}

		code, out, errOut := b.run(t, "forget", "-api", "shop", "-op", "CreateOrder", "-key", "order-1")
		if code != ExitOK || !strings.Contains(out, "forgot") {
			t.Fatalf("idemctl forget: exit %d\n%s%s", code, out, errOut)
		}
		if err := do(asInt); err != nil || runs != 1 {
			t.Fatalf("after idemctl forget: %v, the step ran %d times; want it run once and the run complete", err, runs)
		}
	})
}

package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemgen"
	"github.com/idemgen/idemgen/runtime/idemop"
)

func TestCheckFinal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		final     []string
		transient []int
		want      []string // the fields of the problems, in order
	}{
		{"default", nil, nil, nil},
		{"the default spelt out", idemop.DefaultFinal(), nil, nil},
		{"store 500, keep 402 out", []string{"2xx", "4xx", "500"}, []int{402}, nil},
		{"never-final statuses may be named transient", nil, []int{408, 409, 425, 429}, nil},
		{"409 stored", []string{"2xx", "409"}, nil, []string{"final[1]"}},
		{"429 stored", []string{"429"}, nil, []string{"final[0]"}},
		{"408 and 425 stored", []string{"408", "425"}, nil, []string{"final[0]", "final[1]"}},
		{"not a status", []string{"2xx", "ok", "6xx", "20x", "99"}, nil, []string{"final[1]", "final[2]", "final[3]", "final[4]"}},
		{"1xx", []string{"1xx", "101"}, nil, []string{"final[0]", "final[1]"}},
		{"listed twice", []string{"2xx", "2xx"}, []int{402, 402}, []string{"final[1]", "transient[1]"}},
		{"both final and transient", []string{"2xx", "500"}, []int{500}, []string{"transient[0]"}},
		{"transient out of range", nil, []int{99, 600}, []string{"transient[0]", "transient[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := idemop.CheckFinal(tc.final, tc.transient)
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *idemop.FinalError
					if !errors.As(e, &fe) {
						t.Fatalf("problem %v is not a *FinalError", e)
					}
					got = append(got, fe.Field)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("CheckFinal(%q, %v) = %v, want problems at %v", tc.final, tc.transient, err, tc.want)
			}
		})
	}
}

func TestNewEngineForRefusesABadPolicy(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "CreatePet") || !strings.Contains(msg, "final[1]: 409 is never stored") {
			t.Errorf("panic = %q, want one naming the operation and final[1]", msg)
		}
	}()
	idemgen.NewEngineFor([]*idemop.Operation{{ID: "CreatePet", Final: []string{"2xx", "409"}}}, newMemStore(), idem.WithSharedKeySpace())
}

func TestDoRefusesABadPolicy(t *testing.T) {
	op := &idemop.Operation{ID: "Charge", Final: []string{"429"}}
	ran := false
	_, _, err := idem.Do(context.Background(), newMemStore(), op, "k", nil, func(context.Context) ([]byte, error) {
		ran = true
		return nil, nil
	})
	var fe *idemop.FinalError
	if !errors.As(err, &fe) || fe.Field != "final[0]" || ran {
		t.Errorf("Do = %v (ran %v), want a *FinalError at final[0] and no run", err, ran)
	}
}

// TestDoHonoursThePolicy: Do's result is a 200 answer to the policy, so a
// Final without 2xx runs fn again for a redelivery; the default stores it.
func TestDoHonoursThePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   idemop.Operation
		runs int
	}{
		{"default", idemop.Operation{ID: "Charge"}, 1},
		{"final without 2xx", idemop.Operation{ID: "Charge", Final: []string{"4xx", "5xx"}}, 2},
		{"transient 200", idemop.Operation{ID: "Charge", Transient: []int{200}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			runs := 0
			for range 2 {
				if _, _, err := idem.Do(context.Background(), store, &tc.op, "k", []byte("p"), func(context.Context) ([]byte, error) {
					runs++
					return []byte("done"), nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			if runs != tc.runs {
				t.Errorf("fn ran %d times for two deliveries, want %d", runs, tc.runs)
			}
		})
	}
}

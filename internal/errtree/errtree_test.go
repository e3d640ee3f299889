package errtree_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/idemgen/idemgen/internal/errtree"
)

func TestLeaves(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	wrapped := fmt.Errorf("spec.yaml: %w", errors.Join(b, c)) // wraps one error: a leaf
	for _, tc := range []struct {
		name string
		err  error
		want []error
	}{
		{"nil", nil, nil},
		{"one", a, []error{a}},
		{"joined, nested, in order", errors.Join(a, errors.Join(b, nil, c)), []error{a, b, c}},
		{"a single wrap is a leaf", errors.Join(a, wrapped), []error{a, wrapped}},
		{"%w twice joins", fmt.Errorf("%w; %w", a, b), []error{a, b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errtree.Leaves(tc.err); !slices.Equal(got, tc.want) {
				t.Errorf("Leaves = %v, want %v", got, tc.want)
			}
		})
	}
}

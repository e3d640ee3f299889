package demo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/examples/petstore/demo"
)

// TestDemo runs the whole narrated demo on the in-process Redis; Run fails
// when any counter, status or metric differs from what it narrates.
func TestDemo(t *testing.T) {
	var out strings.Builder
	if err := demo.Run(context.Background(), &out, demo.Config{}); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"-> 409", "-> 422", "-> 503", "replayed", "idem.server.outcomes: first_run 6,", "checked: 6 first runs", "not a replay of step 3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

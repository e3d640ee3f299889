package loadtest

import (
	"slices"
	"testing"
	"time"
)

// TestChartRelativeToTheFloor: a compare run's chart has a pair of bars
// per variant, each the variant's rate over the floor's in the same phase,
// and the floor's line at 1; without replays, one series.
func TestChartRelativeToTheFloor(t *testing.T) {
	vs := []*variant{{name: VariantIdemgen}, {name: VariantFloor}, {name: VariantCheckSet}}
	perSecond := func(n int) *phaseResult { return &phaseResult{requests: n, elapsed: time.Second} }
	first := map[string]*phaseResult{VariantIdemgen: perSecond(9000), VariantFloor: perSecond(10000), VariantCheckSet: perSecond(10500)}
	replay := map[string]*phaseResult{VariantIdemgen: perSecond(15000), VariantFloor: perSecond(10000), VariantCheckSet: perSecond(16000)}
	c := chartOf("Redis", vs, first, replay)
	if !slices.Equal(c.Groups, []string{VariantIdemgen, VariantFloor, VariantCheckSet}) || c.Line != 1 || len(c.Series) != 2 {
		t.Fatalf("groups %v, line %v, %d series", c.Groups, c.Line, len(c.Series))
	}
	if got, want := c.Series[0].Values, []float64{0.9, 1, 1.05}; !slices.Equal(got, want) {
		t.Errorf("first requests %v, want %v", got, want)
	}
	if got, want := c.Series[1].Values, []float64{1.5, 1, 1.6}; !slices.Equal(got, want) {
		t.Errorf("replays %v, want %v", got, want)
	}
	noReplays := map[string]*phaseResult{VariantIdemgen: {}, VariantFloor: {}, VariantCheckSet: {}}
	if c := chartOf("Redis", vs, first, noReplays); len(c.Series) != 1 {
		t.Errorf("a run without replays has %d series, want 1", len(c.Series))
	}
}

package storebench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChartRatios: the chart's bars are the medians over the rounds of
// each variant's rate over the floor's in the same round and mode, the
// table's "x floor", and the chart names every variant.
func TestChartRatios(t *testing.T) {
	second := func(n int) sample { return sample{n: n, elapsed: time.Second} }
	res := results{
		{0, "floor/first"}: second(1000), {1, "floor/first"}: second(2000), {2, "floor/first"}: second(1000),
		{0, "store/first"}: second(700), {1, "store/first"}: second(1200), {2, "store/first"}: second(900),
		{0, "floor/replay"}: second(5000), {1, "floor/replay"}: second(5000), {2, "floor/replay"}: second(5000),
		{0, "store/replay"}: second(6000), {1, "store/replay"}: second(4000), {2, "store/replay"}: second(5500),
	}
	if got, want := res.ratios("store/first", "floor", 3), []float64{0.7, 0.6, 0.9}; !slices.Equal(got, want) {
		t.Errorf("first-request ratios %v, want %v", got, want)
	}
	if got := median(res.ratios("store/replay", "floor", 3)); got != 1.1 {
		t.Errorf("median replay ratio %v, want 1.1", got)
	}
	path := filepath.Join(t.TempDir(), "chart.svg")
	if err := writeChart(path, "PostgreSQL", []string{"floor", "store"}, "floor", res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PostgreSQL", "floor", "store", "first requests", "replays"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the chart does not name %q", want)
		}
	}
}

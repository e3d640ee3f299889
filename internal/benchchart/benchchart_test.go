package benchchart

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveSVG: a chart is an SVG document that names every group, every
// series and the line.
func TestSaveSVG(t *testing.T) {
	c := Chart{
		Title:  "Redis",
		YLabel: "requests per second / the floor's",
		Groups: []string{"idemgen", "floor", "check-then-set"},
		Series: []Series{
			{Label: "first requests", Values: []float64{0.97, 1, 1.04}},
			{Label: "replays", Values: []float64{1.48, 1, 1.6}},
		},
		Line: 1, LineLabel: "the floor",
	}
	path := filepath.Join(t.TempDir(), "chart.svg")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Fatalf("not an SVG document: %v", err)
	}
	for _, want := range []string{"Redis", "idemgen", "floor", "check-then-set", "first requests", "replays", "the floor"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the chart does not name %q", want)
		}
	}
}

// TestSaveRefusesMismatchedSeries: a series without one value per group
// is an error, not a chart with a bar missing.
func TestSaveRefusesMismatchedSeries(t *testing.T) {
	c := Chart{Groups: []string{"a", "b"}, Series: []Series{{Label: "first requests", Values: []float64{1}}}}
	if err := c.Save(filepath.Join(t.TempDir(), "chart.svg")); err == nil {
		t.Fatal("a series of 1 value for 2 groups was drawn")
	}
}

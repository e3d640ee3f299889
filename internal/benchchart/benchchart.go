// Package benchchart draws the benchmark harnesses' bar charts (what
// BENCHMARKS.md and the README show): for each variant of a run, a bar per
// series, such as first requests and replays, relative to the floor of the
// same run, with gonum.org/v1/plot.
package benchchart

import (
	"errors"
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Series is one bar per group, in the groups' order, under one label.
type Series struct {
	Label  string
	Values []float64
}

// Chart is a grouped bar chart.
type Chart struct {
	Title  string
	YLabel string
	Groups []string // the variants, along the x axis
	Series []Series // at most len(Colors)
	// Line, when above 0, draws a dashed line at that value labelled
	// LineLabel (the floor, at 1.0 on a chart of ratios to it).
	Line      float64
	LineLabel string
}

// Colors are the series' bars, in order.
var Colors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x5f, B: 0xa8, A: 0xff},
	color.RGBA{R: 0xe0, G: 0x8a, B: 0x1e, A: 0xff},
	color.RGBA{R: 0x4a, G: 0x9a, B: 0x4a, A: 0xff},
}

// Save draws c to path; its extension chooses the format (.svg, .png,
// .pdf).
func (c Chart) Save(path string) error {
	if len(c.Series) == 0 || len(c.Series) > len(Colors) {
		return fmt.Errorf("benchchart: %d series, want 1 to %d", len(c.Series), len(Colors))
	}
	top := c.Line
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return errors.New("benchchart: series " + s.Label + " has not one value per group")
		}
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.Y.Label.Text = c.YLabel
	p.Y.Min, p.Y.Max = 0, top*1.35 // room above the bars for the legend
	p.NominalX(c.Groups...)
	if c.Line > 0 { // ratios: a labelled tick every half (or whole) ratio
		step := 0.5
		if p.Y.Max > 4 {
			step = 1
		}
		var ticks []plot.Tick
		for v := 0.0; v <= p.Y.Max; v += step {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 1, 64)})
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(50)
	width := vg.Points(22)
	n := len(c.Series)
	for i, s := range c.Series {
		bars, err := plotter.NewBarChart(plotter.Values(s.Values), width)
		if err != nil {
			return fmt.Errorf("benchchart: %w", err)
		}
		bars.Color = Colors[i]
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(2*i-n+1) / 2
		p.Add(bars)
		p.Legend.Add(s.Label, bars)
	}
	if c.Line > 0 {
		line := plotter.NewFunction(func(float64) float64 { return c.Line })
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		line.Color = color.Gray{Y: 0x60}
		p.Add(line)
		p.Legend.Add(c.LineLabel, line)
	}
	w := vg.Length(max(6, 0.3+float64(len(c.Groups))*float64(n)*0.55)) * vg.Inch
	if err := p.Save(w, 3.6*vg.Inch, path); err != nil {
		return fmt.Errorf("benchchart: %w", err)
	}
	return nil
}

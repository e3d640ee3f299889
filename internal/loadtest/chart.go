package loadtest

import "github.com/idemgen/idemgen/internal/benchchart"

// writeChart draws the compare run's throughput to path (.svg, .png).
func writeChart(path, title string, vs []*variant, first, replay map[string]*phaseResult) error {
	return chartOf(title, vs, first, replay).Save(path)
}

// chartOf is the chart of a compare run: for each variant its first
// requests and, when measured, its replays per second, relative to the
// floor of the same run (a line marks 1.0), or in requests per second when
// the run has no floor.
func chartOf(title string, vs []*variant, first, replay map[string]*phaseResult) benchchart.Chart {
	floorFirst, floorReplay := 1.0, 1.0
	c := benchchart.Chart{Title: title, YLabel: "requests per second"}
	if f, ok := first[VariantFloor]; ok && f.throughput() > 0 {
		floorFirst, floorReplay = f.throughput(), max(replay[VariantFloor].throughput(), 1)
		c.YLabel, c.Line, c.LineLabel = "requests per second / the floor's", 1, "the floor"
	}
	firsts := benchchart.Series{Label: "first requests"}
	replays := benchchart.Series{Label: "replays"}
	measured := false
	for _, v := range vs {
		c.Groups = append(c.Groups, v.name)
		firsts.Values = append(firsts.Values, first[v.name].throughput()/floorFirst)
		r := replay[v.name].throughput()
		measured = measured || r > 0
		replays.Values = append(replays.Values, r/floorReplay)
	}
	c.Series = []benchchart.Series{firsts}
	if measured {
		c.Series = append(c.Series, replays)
	}
	return c
}

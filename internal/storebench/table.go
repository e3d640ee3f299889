package storebench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/idemgen/idemgen/internal/benchchart"
)

// result names one timed run of Run: its round and its row,
// "variant/mode".
type result struct {
	round int
	row   string
}

// sample is what one timed run measured: b.N requests in elapsed, the CPU
// they cost the machine and this process, and this process's allocations.
type sample struct {
	n              int
	elapsed        time.Duration
	machine, self  time.Duration
	mallocs, bytes uint64
}

func (s sample) opsPerSec() float64 { return float64(s.n) / max(s.elapsed, 1).Seconds() }

// results are Run's samples.
type results map[result]sample

// printTable writes the table of bench's rows on srv to w: for each row,
// the medians over the rounds of its requests per second, of its ratio to
// the floor's requests per second in the same round and mode (the floor's
// first requests for first requests, its replays for replays), of the
// machine's and this process's CPU per request, and of this process's
// allocations per request. A figure no round measured is "-".
func printTable(w io.Writer, bench string, srv Server, rows []string, floor string, res results) {
	rounds := 0
	for r := range res {
		rounds = max(rounds, r.round+1)
	}
	fmt.Fprintf(w, "%s: %s (%s), %d senders, medians of %d rounds\n", bench, srv.Name, srv.Settings, Senders*runtime.GOMAXPROCS(0), rounds)
	fmt.Fprintf(w, "%-24s %8s %7s %10s %11s %10s %8s\n", "variant", "ops/s", "x floor", "cpu-µs/op", "self-µs/op", "allocs/op", "B/op")
	for _, row := range rows {
		ratio := res.ratios(row, floor, rounds)
		var ops, cpu, self, allocs, bytes []float64
		for round := range rounds {
			s, ok := res[result{round, row}]
			if !ok {
				continue
			}
			n := float64(s.n)
			ops = append(ops, s.opsPerSec())
			if s.machine > 0 { // 0: not readable, or less than a clock tick
				cpu = append(cpu, float64(s.machine/time.Nanosecond)/1e3/n)
			}
			if s.self > 0 {
				self = append(self, float64(s.self/time.Nanosecond)/1e3/n)
			}
			allocs = append(allocs, float64(s.mallocs)/n)
			bytes = append(bytes, float64(s.bytes)/n)
		}
		fmt.Fprintf(w, "%-24s %8s %7s %10s %11s %10s %8s\n", row,
			figure(ops, 0), figure(ratio, 2), figure(cpu, 0), figure(self, 0), figure(allocs, 0), figure(bytes, 0))
	}
}

// ratios are row's requests per second over the floor's in the same
// round and mode, one per round that measured both.
func (res results) ratios(row, floor string, rounds int) []float64 {
	_, mode, _ := strings.Cut(row, "/")
	var out []float64
	for round := range rounds {
		s, ok := res[result{round, row}]
		f, fok := res[result{round, floor + "/" + mode}]
		if ok && fok {
			out = append(out, s.opsPerSec()/f.opsPerSec())
		}
	}
	return out
}

// median of xs, NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + m) / 2
	}
	return m
}

// writeChart draws the run's first requests and replays per second
// relative to the floor (the median of the rounds' ratios, as the
// table's "x floor"), a pair of bars per variant, to path (.svg, .png).
func writeChart(path, title string, variants []string, floor string, res results) error {
	rounds := 0
	for r := range res {
		rounds = max(rounds, r.round+1)
	}
	c := benchchart.Chart{
		Title: title, YLabel: "requests per second / the floor's", Groups: variants,
		Series: []benchchart.Series{{Label: "first requests"}, {Label: "replays"}},
		Line:   1, LineLabel: "the floor",
	}
	for _, v := range variants {
		for i, mode := range []string{"first", "replay"} {
			m := median(res.ratios(v+"/"+mode, floor, rounds))
			if math.IsNaN(m) {
				m = 0
			}
			c.Series[i].Values = append(c.Series[i].Values, m)
		}
	}
	return c.Save(path)
}

// figure is the median of xs with prec decimals, or "-" for none.
func figure(xs []float64, prec int) string {
	if len(xs) == 0 {
		return "-"
	}
	m := median(xs)
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, m)
}

package storebench

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/internal/cpumeter"
	"github.com/idemgen/idemgen/runtime/idemop"
)

// PoolSize is the connections of a harness's pool: above the parallel
// senders, so that none waits for a connection.
const PoolSize = 40

// Senders is the parallel senders per GOMAXPROCS: 16 on two cores.
const Senders = 8

// Rounds is how many rounds Run alternates its variants in, unless
// STOREBENCH_ROUNDS says otherwise.
const Rounds = 3

// RoundCount is how many rounds a benchmark of the harness alternates its
// variants in: STOREBENCH_ROUNDS, or Rounds. (go test's -count runs each
// sub-benchmark that many times in a row, not in turn.)
func RoundCount() int {
	if n, err := strconv.Atoi(os.Getenv("STOREBENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return Rounds
}

// ReplayKeys is how many answered keys a variant's replays cycle through,
// so that concurrent replays are seldom of one key (a store may share such
// reads, a floor does not).
const ReplayKeys = 512

// Op is the operation the engine serves in the harness.
var Op = &idemop.Operation{ID: "createPayment", Method: http.MethodPost, Path: "/payments", KeyHeader: "Idempotency-Key"}

// Variant is one layer under test: Serve answers a request whose key is
// the Idempotency-Key header, its first or a replay, 201 with the
// payment's Answer.
type Variant struct {
	Name  string
	Serve http.HandlerFunc
}

// Server is what the harness tells of a store's database: its name and
// durability settings, printed above the table, and Meter (optional),
// called right before each timed run, whose report, called right after
// it, reports the database's own work per request.
type Server struct {
	Name, Settings string
	Meter          func(b *testing.B) (report func(b *testing.B))
}

// Answer is the business handler's answer for payment id.
func Answer(id int64) []byte { return fmt.Appendf(nil, `{"id":%d,"status":"created"}`, id) }

// created writes the business handler's answer: 201, JSON.
func created(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// Run runs variants on srv, the first of them the floor the others are
// measured against: first requests (a new key each) then replays (of
// ReplayKeys keys each variant answered before the rounds, in turn), from
// Senders parallel senders per GOMAXPROCS, in RoundCount rounds as
// sub-benchmarks "roundN/variant/mode". Each round runs the variants in
// the order of the round before rotated by one, so that none always runs
// first nor always after the others' writes. Each run reports the CPU per
// request (cpumeter), allocations and srv's meter; at the end Run prints
// the table of medians over the rounds (printTable) and, when
// STOREBENCH_CHART_DIR names a directory, draws the ratios to the floor
// into <dir>/<benchmark>.svg.
func Run(b *testing.B, srv Server, variants ...Variant) {
	answered := make([][]string, len(variants))
	for i, v := range variants {
		answered[i] = answerKeys(b, v)
	}
	res := results{}
	for round := range RoundCount() {
		for _, mode := range []string{"first", "replay"} {
			for i := range variants {
				k := (round + i) % len(variants)
				v, keys := variants[k], answered[k]
				row := v.Name + "/" + mode
				b.Run(fmt.Sprintf("round%d/%s", round+1, row), func(b *testing.B) {
					var next atomic.Uint64
					var report func(b *testing.B)
					if srv.Meter != nil {
						report = srv.Meter(b)
					}
					cpu := cpumeter.Start()
					b.ReportAllocs()
					b.SetParallelism(Senders)
					b.ResetTimer()
					var mem0, mem1 runtime.MemStats // as go test counts allocs/op
					runtime.ReadMemStats(&mem0)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if mode == "first" {
								Send(b, v.Serve, rand.Text())
							} else {
								Send(b, v.Serve, keys[next.Add(1)%ReplayKeys])
							}
						}
					})
					runtime.ReadMemStats(&mem1)
					b.StopTimer()
					machine, self := cpu.Spent()
					if report != nil {
						report(b)
					}
					cpu.Report(b)
					// The last call of this function, the one go test
					// reports, is the one kept.
					res[result{round, row}] = sample{
						n: b.N, elapsed: b.Elapsed(), machine: machine, self: self,
						mallocs: mem1.Mallocs - mem0.Mallocs, bytes: mem1.TotalAlloc - mem0.TotalAlloc,
					}
				})
			}
		}
	}
	var rows []string
	for _, mode := range []string{"first", "replay"} {
		for _, v := range variants {
			rows = append(rows, v.Name+"/"+mode)
		}
	}
	printTable(os.Stdout, b.Name(), srv, rows, variants[0].Name, res)
	if dir := os.Getenv("STOREBENCH_CHART_DIR"); dir != "" {
		names := make([]string, len(variants))
		for i, v := range variants {
			names[i] = v.Name
		}
		path := filepath.Join(dir, b.Name()+".svg")
		if err := writeChart(path, srv.Name+" ("+srv.Settings+")", names, variants[0].Name, res); err != nil {
			b.Error(err)
		}
		fmt.Printf("chart: %s\n", path)
	}
}

// answerKeys answers ReplayKeys new keys through v, for its replays, from
// twice Senders senders.
func answerKeys(b *testing.B, v Variant) []string {
	keys := make([]string, ReplayKeys)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 2 * Senders {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < ReplayKeys; i = next.Add(1) - 1 {
				keys[i] = rand.Text()
				Send(b, v.Serve, keys[i])
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return keys
}

// Alternate runs op from Senders parallel senders per GOMAXPROCS under
// each of names, in RoundCount rounds as sub-benchmarks "roundN/name",
// each round in the order of the round before rotated by one, reporting
// the CPU per call (cpumeter); op gets the sub-benchmark, the name and the
// call's number (from 1) within it, and returns false to stop its sender
// (after a failure it reported).
func Alternate(b *testing.B, names []string, op func(b *testing.B, name string, n uint64) bool) {
	for round := range RoundCount() {
		for i := range names {
			name := names[(round+i)%len(names)]
			b.Run(fmt.Sprintf("round%d/%s", round+1, name), func(b *testing.B) {
				var next atomic.Uint64
				cpu := cpumeter.Start()
				b.SetParallelism(Senders)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() && op(b, name, next.Add(1)) {
					}
				})
				cpu.Report(b)
			})
		}
	}
}

// Send sends one request with key to h and fails b unless it is answered
// 201.
func Send(b *testing.B, h http.HandlerFunc, key string) {
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount":5}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h(rec, req)
	if rec.Code != http.StatusCreated {
		b.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

// Package cpumeter measures the CPU time a benchmark's requests cost: the
// whole machine's (the callers, the engine, the store's client and the
// database server together) and the benchmark process's own, so that their
// difference is the rest of the machine's, mostly the database server's.
// On a machine whose CPUs the variants of a benchmark saturate, the CPU a
// request costs tells the variants apart more steadily than their rates.
//
// It reads Linux's /proc/stat and getrusage; where those are not readable
// it reports nothing. It also reports this process's garbage collection:
// how often it ran, which a variant's allocation and live heap drive, and
// the CPU the runtime estimates it took, part of this process's.
package cpumeter

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Meter is a measurement under way (Start).
type Meter struct {
	machine, self time.Duration
	gc            GC
}

// Start starts measuring the machine's and this process's CPU time.
func Start() Meter { return Meter{machineCPU(), Self(), ReadGC()} }

// Report reports the CPU time since Start per b.N as cpu-µs/op (the
// machine's) and self-µs/op (this process's), and this process's garbage
// collections per thousand b.N as gc/kop and their CPU per b.N as
// gc-µs/op.
func (m Meter) Report(b *testing.B) {
	if machine, self := m.Spent(); machine > 0 {
		b.ReportMetric(float64(machine)/float64(b.N)/float64(time.Microsecond), "cpu-µs/op")
		b.ReportMetric(float64(self)/float64(b.N)/float64(time.Microsecond), "self-µs/op")
	}
	gc := ReadGC()
	b.ReportMetric(float64(gc.Cycles-m.gc.Cycles)*1000/float64(b.N), "gc/kop")
	b.ReportMetric(float64(gc.CPU-m.gc.CPU)/float64(b.N)/float64(time.Microsecond), "gc-µs/op")
}

// Spent is the CPU time since Start: the machine's and this process's,
// both 0 where /proc/stat is not readable.
func (m Meter) Spent() (machine, self time.Duration) {
	now := machineCPU()
	if m.machine == 0 || now == 0 {
		return 0, 0
	}
	return now - m.machine, Self() - m.self
}

// GC is what this process's garbage collector has done since it started.
type GC struct {
	Cycles uint64        // completed collections
	CPU    time.Duration // the runtime's estimate of the CPU they took, which it calls an overestimate (a pause counts on every P)
}

// ReadGC reads what the garbage collector has done so far.
func ReadGC() GC {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	var gc GC
	if s[0].Value.Kind() == metrics.KindUint64 {
		gc.Cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		gc.CPU = time.Duration(s[1].Value.Float64() * float64(time.Second))
	}
	return gc
}

// machineCPU is the CPU time the machine has spent busy (user, system,
// interrupts) since it booted, from /proc/stat, or 0 where that is not
// readable.
func machineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0
	}
	var ticks int64
	for i, f := range fields[1:8] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// Self is the CPU time this process has used, or 0 where getrusage fails.
func Self() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

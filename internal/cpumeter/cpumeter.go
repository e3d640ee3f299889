// Package cpumeter measures the CPU time a benchmark's requests cost: the
// whole machine's (the callers, the engine, the store's client and the
// database server together) and the benchmark process's own, so that their
// difference is the rest of the machine's, mostly the database server's.
// On a machine whose CPUs the variants of a benchmark saturate, the CPU a
// request costs tells the variants apart more steadily than their rates.
//
// It reads Linux's /proc/stat and getrusage; where those are not readable
// it reports nothing.
package cpumeter

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Meter is a measurement under way (Start).
type Meter struct{ machine, self time.Duration }

// Start starts measuring the machine's and this process's CPU time.
func Start() Meter { return Meter{machineCPU(), Self()} }

// Report reports the CPU time since Start per b.N as cpu-µs/op (the
// machine's) and self-µs/op (this process's).
func (m Meter) Report(b *testing.B) {
	if now := machineCPU(); m.machine > 0 && now > 0 {
		b.ReportMetric(float64(now-m.machine)/float64(b.N)/float64(time.Microsecond), "cpu-µs/op")
		b.ReportMetric(float64(Self()-m.self)/float64(b.N)/float64(time.Microsecond), "self-µs/op")
	}
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

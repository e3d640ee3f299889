package cpumeter

import (
	"crypto/sha256"
	"runtime"
	"testing"
	"time"
)

// TestCounts checks that both clocks advance while this process works: a
// meter that read nothing would report every variant free.
func TestCounts(t *testing.T) {
	m0, s0 := machineCPU(), Self()
	if m0 == 0 || s0 == 0 {
		t.Skip("no /proc/stat or getrusage here")
	}
	sum := sha256.Sum256(nil)
	for Self()-s0 < 50*time.Millisecond {
		for range 1000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	// The machine was busy at least as long as this process (its clock
	// ticks every 10 ms).
	if d := machineCPU() - m0; d < 20*time.Millisecond {
		t.Fatalf("the machine's CPU time advanced %v while this process used 50 ms", d)
	}
}

// TestReadGC checks that a collection is counted, with some CPU.
func TestReadGC(t *testing.T) {
	before := ReadGC()
	runtime.GC()
	if after := ReadGC(); after.Cycles <= before.Cycles || after.CPU <= before.CPU {
		t.Fatalf("ReadGC() = %+v after runtime.GC, %+v before", after, before)
	}
}

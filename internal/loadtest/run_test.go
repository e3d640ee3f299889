package loadtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRunRefusesNonLoopbackRedis(t *testing.T) {
	for _, addr := range []string{"10.0.0.1:6379", "example.com:6379", "0.0.0.0:6379", "6379"} {
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), []string{"-redis", addr}, &out, &errOut); code != 2 {
			t.Errorf("-redis %s: exit %d, want 2 (stderr %q)", addr, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"-variants", "nope", "-redis", "127.0.0.1:1", "-timeout", "1s"}, &out, &errOut); code != 1 {
		t.Errorf("unreachable Redis: exit %d, want 1", code)
	}
}

// TestRunAllModes runs every mode briefly against a redis-server child
// and checks the report's shape and idemgen's zero duplicates.
func TestRunAllModes(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is required under CI=true")
		}
		t.Skip("redis-server not on PATH")
	}
	var out, errOut bytes.Buffer
	args := []string{
		"-mode", "all", "-duration", "200ms", "-requests", "300", "-rounds", "1", "-warmup", "50ms",
		"-concurrency", "8", "-dup-keys", "10", "-dup-fanout", "8",
		"-memory-records", "200", "-memory-sizes", "200",
		"-capacity-duration", "200ms", "-capacity-sizes", "200", "-capacity-concurrency", "8",
	}
	if code := Run(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	report := out.String()
	for _, want := range []string{
		"### First requests (unique keys)", "### Replays (the same keys again)", "## Concurrent duplicates",
		"| idemgen | 10 | 80 | 10 | 0 | 0 | 1 | 0 |", "| idemgen-strict | 10 | 80 | 10 | 0 | 0 | 1 | 0 |",
		"## Redis memory per completed record",
		"## Operations per Redis shard", "## Capacity plan",
		"| first request: SET NX GET, EVALSHA complete | 200 |", "| replay: SET NX GET | 200 |",
		"| first request, acquire.lua alone: EVALSHA acquire + EVALSHA complete | 200 |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// TestPlanIgnoresDiagnosticRows checks that the capacity plan sizes shards
// from idemgen's own first-request row, not from a comparison row of the
// same body size.
func TestPlanIgnoresDiagnosticRows(t *testing.T) {
	mem := []memResult{{bodySize: 200, location: true, usedPerRecord: 500}, {bodySize: 200, usedPerRecord: 400}}
	caps := []capResult{
		{workload: "first request, acquire.lua alone", bodySize: 200, ops: 100, elapsed: time.Second, cpu: 100, diagnostic: true},
		{workload: "first request: SET NX GET, EVALSHA complete", bodySize: 200, ops: 40000, elapsed: time.Second, cpu: 1},
		{workload: "replay: SET NX GET", bodySize: 200, ops: 90000, elapsed: time.Second, cpu: 1},
	}
	var out bytes.Buffer
	writePlan(&out, mem, caps)
	plan := out.String()
	if !strings.Contains(plan, "200 B: 500 bytes/record, 40000 first req/s per shard;") {
		t.Errorf("plan does not use the first-request row:\n%s", plan)
	}
	if strings.Count(plan, "bytes/record") != 1 {
		t.Errorf("plan has a column per row, want one for 200 B:\n%s", plan)
	}
	// 100,000/s for 1h: 5 shards by rate (40,000/s each at 50%), 7 by memory.
	if !strings.Contains(plan, "| 100,000 | 1h | 360,000,000 | 167.6 GiB, 7 |") {
		t.Errorf("plan row for 100,000/s, 1h:\n%s", plan)
	}
}

package loadtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
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
		"| idemgen | 10 | 80 | 10 | 0 | 0 | 1 | 0 |", "## Redis memory per completed record",
		"## Operations per Redis shard", "## Capacity plan",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

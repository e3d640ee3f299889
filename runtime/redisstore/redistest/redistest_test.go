package redistest

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParseCPU(t *testing.T) {
	got, err := parseCPU("# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.000000\r\n")
	if err != nil || got != 3.75 {
		t.Errorf("got %v, %v; want 3.75 (user + sys, children left out)", got, err)
	}
	if _, err := parseCPU("used_cpu_sys:1.0\r\n"); err == nil {
		t.Error("used_cpu_user missing: no error")
	}
	if _, err := parseCPU("used_cpu_sys:x\r\nused_cpu_user:1\r\n"); err == nil {
		t.Error("malformed used_cpu_sys: no error")
	}
}

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=3,usec=51,usec_per_call=17.00,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_EVAL:calls=12,usec=9,usec_per_call=0.75\r\n" +
		"cmdstat_script|flush:calls=1,usec=4,usec_per_call=4.00\r\n" +
		"not a stat line\r\n"
	got, err := parseCommandStats(info)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"evalsha": 3, "eval": 12, "script|flush": 1}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %d, want %d", k, got[k], v)
		}
	}
	if _, err := parseCommandStats("cmdstat_get:calls=x,usec=1"); err == nil {
		t.Error("malformed calls: no error")
	}
}

func TestCounter(t *testing.T) {
	_, rdb := Mini(t)
	c := CountCommands(rdb)
	ctx := context.Background()
	rdb.Set(ctx, "a", "1", 0)
	rdb.Get(ctx, "a")
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.Get(ctx, "b")
		return nil
	})
	if err != nil && !strings.Contains(err.Error(), "nil") {
		t.Fatal(err)
	}
	if got := c.RoundTrips(); got != 3 {
		t.Errorf("round trips: got %d, want 3 (%v)", got, c.Calls())
	}
	if got := c.Calls(); got["get"] != 3 || got["set"] != 1 {
		t.Errorf("calls: got %v", got)
	}
	c.Reset()
	if c.RoundTrips() != 0 || len(c.Calls()) != 0 {
		t.Error("Reset left counts")
	}
}

func TestPrefixIsUniqueAndGlobSafe(t *testing.T) {
	a, b := Prefix(t), Prefix(t)
	if a == b {
		t.Fatalf("two prefixes are equal: %s", a)
	}
	if strings.ContainsAny(a, "*?[]\\{}") {
		t.Errorf("prefix %q holds glob or hash-tag characters", a)
	}
}

func TestRealCommandCalls(t *testing.T) {
	rdb := Real(t)
	before := CommandCalls(t, rdb)["ping"]
	rdb.Ping(context.Background())
	if after := CommandCalls(t, rdb)["ping"]; after <= before {
		t.Errorf("ping calls: %d then %d", before, after)
	}
}

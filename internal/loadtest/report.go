package loadtest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// writeHeader writes where and how the numbers were measured.
func writeHeader(w io.Writer, e env, cfg Config) {
	host, _ := os.Hostname()
	redis := e.redisAddr
	if e.childRedis {
		redis += " (child redis-server, persistence off"
		if cfg.RedisCPUs != "" {
			redis += ", pinned to CPUs " + cfg.RedisCPUs
		}
		redis += ")"
	}
	fmt.Fprintf(w, "# idemload\n\n")
	fmt.Fprintf(w, "- date: %s\n- host: %s, CPUs: %s\n- Go: %s\n- Redis: %s at %s\n- command: `%s`\n\n",
		e.date, host, e.cpus, e.goVersion, e.redisVersion, redis, strings.TrimSpace("idemload "+strings.Join(os.Args[1:], " ")))
}

// writeCompare writes the comparison tables.
func writeCompare(w io.Writer, cfg Config, vs []*variant, first, replay map[string]*phaseResult, dups map[string]dupResult) {
	fmt.Fprintf(w, "## Throughput and latency\n\n")
	fmt.Fprintf(w, "Loopback HTTP/1.1, %d concurrent connections, %d-byte JSON response, %d rounds of %v (at most %d requests) per phase and variant, variants in rotated order each round; a %v warm-up per variant first. Ratios are to the floor and to bare, from the same run. Go CPU/req is this process's CPU time (HTTP client, HTTP server, middleware, go-redis) per request; Redis CPU/req is the server's (INFO used_cpu_user+sys), master and replica together for the variants on the replicated master.\n\n",
		cfg.Concurrency, cfg.BodySize, cfg.Rounds, cfg.Duration, cfg.Requests, cfg.Warmup)
	for _, ph := range []struct {
		title string
		res   map[string]*phaseResult
		rtt   func(*variant) string
	}{
		{"First requests (unique keys)", first, func(v *variant) string { return v.redisFirst }},
		{"Replays (the same keys again)", replay, func(v *variant) string { return v.redisReplay }},
	} {
		fmt.Fprintf(w, "### %s\n\n", ph.title)
		fl, bare := ph.res[VariantFloor], ph.res[VariantBare]
		// The floor-store column appears when that variant ran.
		fs, fsHead, fsAlign := ph.res[VariantFloorStore], "", ""
		if fs != nil {
			fsHead, fsAlign = " vs floor-store |", "--:|"
		}
		fmt.Fprintln(w, "| variant | Redis round trips | Redis round trips/req (measured) | requests | req/s | vs floor |"+fsHead+" vs bare | p50 | p50 vs floor | p99 | p99 vs floor | Go CPU/req | Redis CPU/req | handler runs | errors |")
		fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|"+fsAlign+"--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, v := range vs {
			r := ph.res[v.name]
			fsCell := ""
			if fs != nil {
				fsCell = " " + ratio(r.throughput(), fs, (*phaseResult).throughput) + " |"
			}
			fmt.Fprintf(w, "| %s | %s | %.2f | %d | %.0f | %s |%s %s | %s | %s | %s | %s | %s | %s | %d | %d |\n",
				v.name, ph.rtt(v), float64(r.redisCmds)/float64(max(r.requests, 1)), r.requests, r.throughput(),
				ratio(r.throughput(), fl, (*phaseResult).throughput), fsCell, ratio(r.throughput(), bare, (*phaseResult).throughput),
				ms(r.percentile(50)), latRatio(r, fl, 50), ms(r.percentile(99)), latRatio(r, fl, 99),
				r.perRequest(r.goCPU), r.perRequest(r.redisCPU), r.runs, r.errors)
		}
		fmt.Fprintln(w)
		if with, without := ph.res[VariantIdemgenReplica], ph.res[VariantIdemgen]; with != nil && without != nil && without.requests > 0 {
			fmt.Fprintf(w, "- %s / %s: %s of the requests per second; p50 %s vs %s, p99 %s vs %s\n",
				VariantIdemgenReplica, VariantIdemgen, ratio(with.throughput(), without, (*phaseResult).throughput),
				ms(with.percentile(50)), ms(without.percentile(50)), ms(with.percentile(99)), ms(without.percentile(99)))
		}
		for _, v := range vs {
			if r := ph.res[v.name]; r.firstErr != nil {
				fmt.Fprintf(w, "- %s first error: %v\n", v.name, r.firstErr)
			}
		}
	}
	if len(dups) == 0 {
		return
	}
	fmt.Fprintf(w, "## Concurrent duplicates\n\n")
	fmt.Fprintf(w, "Each key is sent by %d goroutines released at once (%d keys; keys in flight at a time: %d). Handler runs are counted per key by the handler itself. Only idemgen marks its replays (Idempotent-Replayed: true); the naive variants' replays are among their 2xx.\n\n",
		cfg.DupFanout, cfg.DupKeys, max(cfg.Concurrency/cfg.DupFanout, 1))
	fmt.Fprintln(w, "| variant | keys | requests | handler runs | duplicate runs | keys run more than once | max runs of one key | keys never run | 2xx (of which replays) | 409 | other | errors |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, v := range vs {
		d, ok := dups[v.name]
		if !ok {
			continue
		}
		ok2xx, other := 0, 0
		for st, n := range d.statuses {
			switch {
			case st >= 200 && st < 300:
				ok2xx += n
			case st != 409:
				other += n
			}
		}
		name := v.name
		if !v.protects {
			name += " (no protection)"
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %d (%d) | %d | %d | %d |\n",
			name, d.keys, d.requests, d.runs, d.duplicates, d.keysDuplicated, d.maxRuns, d.keysNeverRun,
			ok2xx, d.replays, d.statuses[409], other, d.errors)
	}
	fmt.Fprintln(w)
}

// ratio formats a/b's metric, or "-" without b.
func ratio(a float64, b *phaseResult, metric func(*phaseResult) float64) string {
	if b == nil || metric(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/metric(b))
}

// latRatio formats r's p-th percentile over b's.
func latRatio(r, b *phaseResult, p float64) string {
	if b == nil || b.percentile(p) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(r.percentile(p))/float64(b.percentile(p)))
}

// ms formats d in milliseconds with three decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

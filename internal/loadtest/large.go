package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// largeResult is what the large-response mode measured: concurrency
// clients each sending first requests whose handler answers a body of
// bodySize bytes, through idemgen on Redis, on loopback.
type largeResult struct {
	requests, concurrency, bodySize int
	elapsed                         time.Duration
	baseHeap, peakHeap              uint64           // heap objects (live and not yet swept) before the load and at its peak
	baseLive, peakLive              uint64           // heap marked live by the last GC, before the load and at its peak
	allocated                       uint64           // bytes allocated during the load
	completed                       int64            // results stored (Completed hook)
	completeTimeouts                int64            // complete calls that ended in the store timeout
	unstored                        int64            // results not stored (Unstored hook)
	degraded                        int64            // answers marked Idempotency-Degraded
	failed                          int64            // answers that were not 201 with the whole body
	failures                        map[string]int64 // failed answers by status and problem code, or transport error
}

// perInFlight is the peak above the baseline per concurrent request.
func (r largeResult) perInFlight(peak, base uint64) float64 {
	if peak < base {
		return 0
	}
	return float64(peak-base) / float64(r.concurrency)
}

// large runs the large-response load: cfg.LargeRequests first requests, at
// most cfg.LargeConcurrency at once, each answered a cfg.LargeBody-byte
// JSON body that idemgen stores in Redis before answering. It samples the
// live heap (runtime/metrics) every millisecond for the peak, and counts
// completions that timed out and results that went unstored.
func large(ctx context.Context, cfg Config, rdb *redis.Client, prefix string, stdout, stderr io.Writer) (largeResult, error) {
	res := largeResult{requests: cfg.LargeRequests, concurrency: cfg.LargeConcurrency, bodySize: cfg.LargeBody}
	body := jsonBody(cfg.LargeBody, 7)
	hooks := idem.Hooks{
		Completed: func(context.Context, idem.Event) { atomic.AddInt64(&res.completed, 1) },
		Unstored:  func(context.Context, idem.Event) { atomic.AddInt64(&res.unstored, 1) },
		StoreCall: func(ctx context.Context, ev idem.Event) (context.Context, func(idem.Event)) {
			if ev.Call != "complete" {
				return ctx, nil
			}
			return ctx, func(end idem.Event) {
				if errors.Is(end.Err, context.DeadlineExceeded) {
					atomic.AddInt64(&res.completeTimeouts, 1)
				}
			}
		},
	}
	store := redisstore.New(rdb, redisstore.WithPrefix(prefix+":large"), redisstore.WithLogger(nil))
	engine := idem.NewEngine(store, idem.WithHooks(hooks), idem.WithLogger(nil))
	op := &idemop.Operation{ID: "ExportReport", Method: http.MethodPost, Path: "/reports", KeyHeader: idemop.DefaultKeyHeader}
	mw := engine.Middleware(*op)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body) // one Write, as json.Marshal's result is written
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, fmt.Errorf("loadtest: listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/reports"
	client := newClient(cfg.LargeConcurrency)
	defer client.CloseIdleConnections()

	// Warm up a few connections, then settle the heap for the baseline.
	run := strings.ToLower(rand.Text()[:6])
	if err := forEach(ctx, 16, 16, func(i int) error {
		return largeCall(ctx, client, url, fmt.Sprintf("%s-w-%d", run, i), len(body), nil)
	}); err != nil {
		return res, fmt.Errorf("large warm-up: %w", err)
	}
	res.completed, res.completeTimeouts, res.unstored = 0, 0, 0
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(samples)
	res.baseHeap, res.baseLive = samples[0].Value.Uint64(), samples[1].Value.Uint64()
	alloc0 := samples[2].Value.Uint64()
	peak, peakLive := res.baseHeap, res.baseLive
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		s := samples[:2:2]
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
				peakLive = max(peakLive, s[1].Value.Uint64())
			}
		}
	})
	fmt.Fprintf(stderr, "idemload: large: %d requests of %d-byte responses, %d at once\n", cfg.LargeRequests, cfg.LargeBody, cfg.LargeConcurrency)
	start := time.Now()
	var degraded, failed atomic.Int64
	var mu sync.Mutex // guards res.failures
	res.failures = map[string]int64{}
	err = forEach(ctx, cfg.LargeRequests, cfg.LargeConcurrency, func(i int) error {
		err := largeCall(ctx, client, url, fmt.Sprintf("%s-%d", run, i), len(body), &degraded)
		if err != nil {
			failed.Add(1)
			mu.Lock()
			res.failures[failureKind(err)]++
			mu.Unlock()
		}
		return nil
	})
	res.elapsed = time.Since(start)
	close(stop)
	sampler.Wait()
	if err != nil {
		return res, err
	}
	metrics.Read(samples)
	res.peakHeap, res.peakLive, res.allocated = peak, peakLive, samples[2].Value.Uint64()-alloc0
	res.degraded, res.failed = degraded.Load(), failed.Load()
	writeLarge(stdout, res)
	return res, nil
}

// largeCall sends one first request with key and reads the answer, which
// must be 201 with size bytes; degraded counts answers marked
// Idempotency-Degraded.
func largeCall(ctx context.Context, client *http.Client, url, key string, size int, degraded *atomic.Int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"report":"q3"}`))
	if err != nil {
		return err
	}
	req.Header.Set(idemop.DefaultKeyHeader, key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if degraded != nil && resp.Header.Get(idemop.HeaderDegraded) == "true" {
		degraded.Add(1)
	}
	if resp.StatusCode != http.StatusCreated {
		var p struct{ Code string }
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&p)
		return &answerError{status: resp.StatusCode, code: p.Code}
	}
	n, err := io.Copy(io.Discard, resp.Body)
	switch {
	case err != nil:
		return err
	case n != int64(size):
		return &answerError{status: resp.StatusCode, n: n, want: size}
	}
	return nil
}

// answerError is an answer that was not 201 with the whole body.
type answerError struct {
	status int
	code   string // the problem's code, if it is a problem
	n      int64  // body bytes of a 201
	want   int
}

func (e *answerError) Error() string {
	if e.status != http.StatusCreated {
		return fmt.Sprintf("status %d %s", e.status, e.code)
	}
	return fmt.Sprintf("201 with %d body bytes, want %d", e.n, e.want)
}

// failureKind names a failed call for the report: its status, or the
// transport error's kind.
func failureKind(err error) string {
	var ae *answerError
	switch {
	case errors.As(err, &ae):
		return strings.TrimSpace(strconv.Itoa(ae.status) + " " + ae.code)
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "Client.Timeout"):
		return "client timeout"
	}
	return "transport error"
}

// writeLarge writes the large-response table.
func writeLarge(w io.Writer, r largeResult) {
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "\n## Large responses: %d requests of %d-byte bodies, %d at once\n\n", r.requests, r.bodySize, r.concurrency)
	fmt.Fprintln(w, "| peak heap (per in-flight request, per body byte) | peak live heap (per in-flight request, per body byte) | allocated per request | stored | completions timed out | unstored (Idempotency-Degraded) | failed | elapsed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	heap, live := r.perInFlight(r.peakHeap, r.baseHeap), r.perInFlight(r.peakLive, r.baseLive)
	fmt.Fprintf(w, "| %.0f MiB (%.2f MiB, %.2f) | %.0f MiB (%.2f MiB, %.2f) | %.2f MiB | %d | %d | %d (%d) | %d | %.1f s |\n",
		mib(r.peakHeap), heap/(1<<20), heap/float64(r.bodySize), mib(r.peakLive), live/(1<<20), live/float64(r.bodySize),
		float64(r.allocated)/float64(r.requests)/(1<<20), r.completed, r.completeTimeouts, r.unstored, r.degraded, r.failed, r.elapsed.Seconds())
	if len(r.failures) > 0 {
		kinds := slices.Sorted(maps.Keys(r.failures))
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s: %d", k, r.failures[k]))
		}
		fmt.Fprintf(w, "\nFailed answers: %s.\n", strings.Join(parts, ", "))
	}
}

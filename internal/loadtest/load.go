package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// server serves every variant on 127.0.0.1 under /<variant name>.
type server struct {
	srv  *http.Server
	ln   net.Listener
	base string // http://127.0.0.1:port
	done chan error
}

// startServer serves the variants, each wrapping its own counting handler
// answering body.
func startServer(vs []*variant, body []byte) (*server, error) {
	mux := http.NewServeMux()
	for _, v := range vs {
		if v.serve != nil {
			mux.Handle("POST /"+v.name, v.serve(body, v.runs))
			continue
		}
		mux.Handle("POST /"+v.name, v.wrap(handler(body, v.runs)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loadtest: listen on loopback: %w", err)
	}
	s := &server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:   ln,
		base: "http://" + ln.Addr().String(),
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// close shuts the server down.
func (s *server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("loadtest: shut down server: %w", err)
	}
	if err := <-s.done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("loadtest: serve: %w", err)
	}
	return nil
}

// newClient returns an HTTP client keeping up to conns connections alive.
func newClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // loopback only, never through a proxy
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
		Timeout: 30 * time.Second,
	}
}

// exchange is one request's outcome.
type exchange struct {
	status   int
	replayed bool // Idempotent-Replayed: true
	err      error
}

// send POSTs reqBody to url with key and reads the whole answer.
func send(ctx context.Context, c *http.Client, url, key string, reqBody []byte) exchange {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(reqBody))
	if err != nil {
		return exchange{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(keyHeader, key)
	resp, err := c.Do(req)
	if err != nil {
		return exchange{err: err}
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return exchange{err: err}
	}
	return exchange{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
}

// phaseResult is what one phase of one variant measured.
type phaseResult struct {
	requests  int
	elapsed   time.Duration
	latencies []time.Duration // one per request, unsorted until summarise
	errors    int             // transport errors and unexpected statuses
	firstErr  error
	runs      int64         // handler executions during the phase
	redisCmds int64         // Redis round trips during the phase (counted by the client)
	goCPU     time.Duration // this process's CPU time (HTTP client, server, engine)
	redisCPU  time.Duration // the Redis server's CPU time
}

// add merges o into r.
func (r *phaseResult) add(o phaseResult) {
	r.requests += o.requests
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
	r.errors += o.errors
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
	r.runs += o.runs
	r.redisCmds += o.redisCmds
	r.goCPU += o.goCPU
	r.redisCPU += o.redisCPU
}

// perRequest formats d divided over the phase's requests in microseconds.
func (r *phaseResult) perRequest(d time.Duration) string {
	if r.requests == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(r.requests)/float64(time.Microsecond))
}

// throughput is requests per second.
func (r *phaseResult) throughput() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// percentile returns the p-th percentile (0 < p <= 100) of the latencies,
// nearest-rank. It sorts them on first use.
func (r *phaseResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	if !slices.IsSorted(r.latencies) {
		slices.Sort(r.latencies)
	}
	rank := int(float64(len(r.latencies))*p/100+0.999999) - 1
	return r.latencies[min(max(rank, 0), len(r.latencies)-1)]
}

// loadSpec is one phase's workload.
type loadSpec struct {
	url         string
	key         func(i int) string // the key of the i-th request
	limit       int                // at most this many requests
	duration    time.Duration      // and at most this long
	concurrency int
	body        []byte
	want        int // expected status
}

// runLoad sends requests from spec.concurrency goroutines until limit
// requests were sent or duration passed, and times each.
func runLoad(ctx context.Context, c *http.Client, spec loadSpec) phaseResult {
	var next atomic.Int64
	deadline := time.Now().Add(spec.duration)
	results := make([]phaseResult, spec.concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range spec.concurrency {
		wg.Go(func() {
			res := &results[w]
			res.latencies = make([]time.Duration, 0, 1024)
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= spec.limit || time.Now().After(deadline) {
					return
				}
				t0 := time.Now()
				ex := send(ctx, c, spec.url, spec.key(i), spec.body)
				res.latencies = append(res.latencies, time.Since(t0))
				res.requests++
				if ex.err == nil && ex.status != spec.want {
					ex.err = fmt.Errorf("status %d, want %d", ex.status, spec.want)
				}
				if ex.err != nil {
					res.errors++
					if res.firstErr == nil {
						res.firstErr = fmt.Errorf("%s key %s: %w", spec.url, spec.key(i), ex.err)
					}
				}
			}
		})
	}
	wg.Wait()
	total := phaseResult{elapsed: time.Since(start)}
	for _, r := range results {
		r.elapsed = 0
		total.add(r)
	}
	return total
}

// keyFunc returns the keys "<run>-<variant>-r<round>-<i>", padded to the
// length of a UUID so the stored keys are as long as real ones.
func keyFunc(run, variant string, round int) func(i int) string {
	prefix := run + "-" + variant + "-r" + strconv.Itoa(round) + "-"
	return func(i int) string {
		s := prefix + strconv.Itoa(i)
		if len(s) < 36 {
			s += "________________________________________"[:36-len(s)]
		}
		return s
	}
}

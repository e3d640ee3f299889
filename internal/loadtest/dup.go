package loadtest

import (
	"context"
	"net/http"
	"sync"
)

// dupResult is what the concurrent-duplicate workload found for a variant.
type dupResult struct {
	keys, requests int
	runs           int // handler executions
	duplicates     int // executions beyond the first, summed over keys
	keysDuplicated int // keys executed more than once
	keysNeverRun   int // keys not executed at all
	maxRuns        int // most executions of one key
	statuses       map[int]int
	replays        int // answers marked Idempotent-Replayed
	errors         int // transport errors
	firstErr       error
}

// dupSpec is the concurrent-duplicate workload: keys keys, each sent by
// fanout goroutines released at once; parallel keys are in flight together.
type dupSpec struct {
	url                    string
	key                    func(i int) string
	keys, fanout, parallel int
	body                   []byte
}

// runDuplicates fires the workload and counts the handler's executions per
// key from runs; it does not assume any variant protects.
func runDuplicates(ctx context.Context, c *http.Client, spec dupSpec, runs *runCounter) dupResult {
	res := dupResult{keys: spec.keys, statuses: map[int]int{}}
	for i := range spec.keys {
		runs.watch(spec.key(i))
	}
	var mu sync.Mutex // guards res while a batch runs
	for first := 0; first < spec.keys && ctx.Err() == nil; first += spec.parallel {
		batch := min(spec.parallel, spec.keys-first)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := range batch {
			key := spec.key(first + k)
			for range spec.fanout {
				wg.Go(func() {
					<-start
					ex := send(ctx, c, spec.url, key, spec.body)
					mu.Lock()
					defer mu.Unlock()
					res.requests++
					if ex.err != nil {
						res.errors++
						if res.firstErr == nil {
							res.firstErr = ex.err
						}
						return
					}
					res.statuses[ex.status]++
					if ex.replayed {
						res.replays++
					}
				})
			}
		}
		close(start)
		wg.Wait()
	}
	for i := range spec.keys {
		n := runs.of(spec.key(i))
		res.runs += n
		res.maxRuns = max(res.maxRuns, n)
		switch {
		case n == 0:
			res.keysNeverRun++
		case n > 1:
			res.duplicates += n - 1
			res.keysDuplicated++
		}
	}
	return res
}

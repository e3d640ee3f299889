package previouslayout_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

// previousLayoutCommit is the last commit of the previous key layout
// (records under the API's and operation's full names, fingerprints
// without the API identity): the release a rolling upgrade comes from.
const previousLayoutCommit = "4f43d5b"

// buildPreviousServer builds testdata/previousserver against the runtime
// of previousLayoutCommit (git archive of the repository this test runs
// in) and returns the binary. Without git or the commit, the test is
// skipped; when CI=true it fails instead, unless the checkout is shallow
// (a clone of the last commit alone has no previous version to build).
func buildPreviousServer(t *testing.T) string {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fail("git rev-parse: %v", err)
	}
	if shallow, err := exec.Command("git", "rev-parse", "--is-shallow-repository").Output(); err == nil && strings.TrimSpace(string(shallow)) == "true" {
		t.Skipf("a shallow clone holds no commit of the previous version (%s) to build", previousLayoutCommit)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "previous.tar")
	if out, err := exec.Command("git", "-C", strings.TrimSpace(string(root)), "archive", "-o", archive, previousLayoutCommit, "runtime", "lua", "internal/redistest").CombinedOutput(); err != nil {
		fail("git archive %s: %v\n%s", previousLayoutCommit, err, out)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	src, err := os.ReadFile("testdata/previousserver/main.go")
	if err != nil {
		t.Fatal(err)
	}
	cmdDir := filepath.Join(dir, "runtime", "cmd", "previousserver")
	if err := os.MkdirAll(cmdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmdDir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "previousserver")
	build := exec.Command("go", "build", "-o", bin, "./cmd/previousserver")
	build.Dir = filepath.Join(dir, "runtime")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous version: %v\n%s", err, out)
	}
	return bin
}

// rollout is one Redis server with processes of the previous version
// (previousserver) and of this one (engines in the test) serving
// CreateOrder of API shop on it, every run recorded in Redis per key.
type rollout struct {
	t      *testing.T
	bin    string
	rdb    *redis.Client
	addr   string
	prefix string
	op     idemop.Operation
}

// startPrevious starts a process of the previous version with the given
// lease and heartbeat and returns its base URL; it is killed when the
// test ends.
func (ro *rollout) startPrevious(lock time.Duration, heartbeat bool) string {
	ro.t.Helper()
	cmd := exec.Command(ro.bin, "-redis", ro.addr, "-prefix", ro.prefix, "-lock", lock.String(), "-heartbeat="+strconv.FormatBool(heartbeat))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		ro.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		ro.t.Fatal(err)
	}
	ro.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		ro.t.Fatalf("previous version did not start: %v", err)
	}
	return "http://" + strings.TrimSpace(line)
}

// startCurrent starts a process of this version (an engine on its own
// store, with the migration on, as a process of an upgrade has) with the
// given lease and heartbeat and returns its base URL.
func (ro *rollout) startCurrent(lock time.Duration, heartbeat bool, log io.Writer) string {
	ro.t.Helper()
	store := previouslayout.New(ro.rdb, 0, redisstore.WithPrefix(ro.prefix), redisstore.WithLogger(nil))
	e := idem.NewEngine(store, idem.WithHeartbeat(heartbeat), idem.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	op := ro.op
	op.Lock = lock
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.Serve(w, r, &op, func(w http.ResponseWriter, r *http.Request) {
			k := r.Header.Get("Idempotency-Key")
			info, _ := idem.FromContext(r.Context())
			ctx := context.Background()
			ro.rdb.RPush(ctx, ro.prefix+"-runs:"+k, fmt.Sprintf("current %d", info.Fence))
			if r.Header.Get("X-Block") != "" {
				ro.rdb.BLPop(ctx, 0, ro.prefix+"-go:"+k)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"key":%q,"by":"current","fence":%d}`, k, info.Fence)
		})
	}))
	ro.t.Cleanup(srv.Close)
	return srv.URL
}

// rolloutAnswer is a response as the tests compare it.
type rolloutAnswer struct {
	status   int
	replayed bool
	body     string
}

// post sends the request of key to the process at url.
func (ro *rollout) post(url, key string, block bool) rolloutAnswer {
	req, err := http.NewRequest(http.MethodPost, url+"/orders", strings.NewReader(`{"item":"`+key+`"}`))
	if err != nil {
		ro.t.Error(err)
		return rolloutAnswer{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if block {
		req.Header.Set("X-Block", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ro.t.Error(err)
		return rolloutAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rolloutAnswer{status: resp.StatusCode, replayed: resp.Header.Get(idemop.HeaderReplayed) == "true", body: string(b)}
}

// runs returns the runs of key's handler, in order: "previous <fence>" or
// "current <fence>".
func (ro *rollout) runs(key string) []string {
	ro.t.Helper()
	v, err := ro.rdb.LRange(context.Background(), ro.prefix+"-runs:"+key, 0, -1).Result()
	if err != nil {
		ro.t.Fatal(err)
	}
	return v
}

// waitRuns returns once key's handler has run n times (a bounded wait on
// Redis, which the handlers write before they block).
func (ro *rollout) waitRuns(key string, n int) {
	ro.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(ro.runs(key)) < n {
		if time.Now().After(deadline) {
			ro.t.Fatalf("%s: runs %v, want %d", key, ro.runs(key), n)
		}
		time.Sleep(10 * time.Millisecond) // polling Redis, not waiting for an event
	}
}

// TestRollingUpgradeBesideThePreviousVersion runs processes of the
// previous version (built from previousLayoutCommit) beside processes of
// this one on one real, initially empty redis-server, and counts the runs
// of every key across them:
//
//   - (b) the first process of this version starts on the empty server;
//     then a previous process answers, and the retry on a current one is
//     replayed (once, it looked nothing up for good);
//   - (a) a current process answers, and the retry on a previous one is
//     replayed (once, the previous one looked for it in vain);
//   - 40 keys, first sent to either version and retried 4 times on both,
//     at once: each ran once, every retry replayed; 20 keys each sent to
//     both versions at once: each ran once;
//   - (c) a lease lapsed under the previous version is taken over by this
//     one, lapses again, and is taken over by the previous one: each fence
//     is above the one before (once, this version's takeover got fence 1);
//   - (d) the layout marker set to -1, 1e30, 1.5 or garbage: a new process
//     answers 503 store-misconfigured, runs nothing, and logs what to do
//     (once, lookups silently stopped).
func TestRollingUpgradeBesideThePreviousVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous version and runs it")
	}
	bin := buildPreviousServer(t)
	srv := startRedisProc(t)
	ro := &rollout{t: t, bin: bin, rdb: srv.client(), addr: srv.s.Addr(), prefix: "idem",
		op: idemop.Operation{ID: "CreateOrder", API: "shop", Method: http.MethodPost, Path: "/orders"}}
	ctx := context.Background()

	// (b) This version first, on the empty server.
	cur := ro.startCurrent(time.Minute, true, io.Discard)
	if a := ro.post(cur, "k-warm", false); a.status != http.StatusCreated {
		t.Fatalf("first request on the current version: %+v", a)
	}
	prev := ro.startPrevious(time.Minute, true)
	if a := ro.post(prev, "k-b", false); a.status != http.StatusCreated || a.replayed {
		t.Fatalf("previous version's first request: %+v", a)
	}
	if a := ro.post(cur, "k-b", false); !a.replayed || !strings.Contains(a.body, `"by":"previous"`) {
		t.Errorf("(b) retry on the current version of a request the previous one answered: %+v; want its replay", a)
	}
	// (a) This version answers, the retry reaches the previous one.
	if a := ro.post(cur, "k-a", false); a.status != http.StatusCreated || a.replayed {
		t.Fatalf("current version's first request: %+v", a)
	}
	if a := ro.post(prev, "k-a", false); !a.replayed || !strings.Contains(a.body, `"by":"current"`) {
		t.Errorf("(a) retry on the previous version of a request the current one answered: %+v; want its replay", a)
	}

	// Both versions at once, every key retried on both.
	cur2, prev2 := ro.startCurrent(time.Minute, true, io.Discard), ro.startPrevious(time.Minute, true)
	procs := []string{cur, prev, cur2, prev2}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			key := fmt.Sprintf("k-mix-%d", i)
			if a := ro.post(procs[i%4], key, false); a.status != http.StatusCreated || a.replayed {
				t.Errorf("%s first request: %+v", key, a)
			}
			for j := 1; j <= 4; j++ {
				if a := ro.post(procs[(i+j)%4], key, false); !a.replayed {
					t.Errorf("%s retry %d on %s: %+v; want a replay", key, j, procs[(i+j)%4], a)
				}
			}
		})
	}
	wg.Wait()
	for _, k := range []string{"k-warm", "k-b", "k-a"} {
		if n := len(ro.runs(k)); n != 1 {
			t.Errorf("%s ran %d times (%v), want once", k, n, ro.runs(k))
		}
	}
	for i := range 40 {
		if k := fmt.Sprintf("k-mix-%d", i); len(ro.runs(k)) != 1 {
			t.Errorf("%s ran %d times (%v), want once", k, len(ro.runs(k)), ro.runs(k))
		}
	}

	// The same key sent to both versions at once: one run.
	for i := range 20 {
		key := fmt.Sprintf("k-race-%d", i)
		for j := range 4 {
			wg.Go(func() {
				if a := ro.post(procs[(i+j)%4], key, false); a.status != http.StatusCreated && a.status != http.StatusConflict {
					t.Errorf("%s at once on both versions: %+v", key, a)
				}
			})
		}
	}
	wg.Wait()
	for i := range 20 {
		if k := fmt.Sprintf("k-race-%d", i); len(ro.runs(k)) != 1 {
			t.Errorf("%s, sent to both versions at once, ran %d times (%v), want once", k, len(ro.runs(k)), ro.runs(k))
		}
	}

	// (c) Lapsed leases taken over across the versions: 1 s leases without
	// a heartbeat, handlers held until the end.
	shortPrev, shortCur := ro.startPrevious(time.Second, false), ro.startCurrent(time.Second, false, io.Discard)
	var held sync.WaitGroup
	takeOver := func(url string, runs int) {
		held.Go(func() {
			for {
				a := ro.post(url, "k-c", true)
				if a.status != http.StatusConflict {
					return
				}
				time.Sleep(20 * time.Millisecond) // pacing retries of a live lease
			}
		})
		ro.waitRuns("k-c", runs)
	}
	takeOver(shortPrev, 1)
	takeOver(shortCur, 2)
	takeOver(shortPrev, 3)
	for range 3 {
		ro.rdb.RPush(ctx, ro.prefix+"-go:k-c", "go")
	}
	held.Wait()
	runs := ro.runs("k-c")
	var last int64
	for i, r := range runs {
		who, f, _ := strings.Cut(r, " ")
		fence, _ := strconv.ParseInt(f, 10, 64)
		if want := []string{"previous", "current", "previous"}[i]; who != want || fence <= last {
			t.Errorf("(c) takeovers across the versions: runs %v; want previous, current, previous with growing fences", runs)
			break
		}
		last = fence
	}

	// (d) A malformed marker.
	for _, bad := range []string{"-1", "1e30", "1.5", "garbage"} {
		if err := ro.rdb.Set(ctx, ro.prefix+":"+previouslayout.KeyLayoutMarker, bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		var log syncBuffer
		url := ro.startCurrent(time.Minute, true, &log)
		key := "k-d" + bad
		a := ro.post(url, key, false)
		if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "store-misconfigured") || len(ro.runs(key)) != 0 {
			t.Errorf("(d) marker %q: %+v, runs %v; want 503 store-misconfigured and no run", bad, a, ro.runs(key))
		}
		if !strings.Contains(log.String(), previouslayout.KeyLayoutMarker) {
			t.Errorf("(d) marker %q: the log does not name the marker: %q", bad, log.String())
		}
	}
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemop"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// replicaThroughLink starts a master and a replica of it that replicates
// through a proxy (link) the test can freeze, and waits until the replica
// is in sync.
func replicaThroughLink(t *testing.T) (master, replica *redisproc.Server, link *redisproc.Proxy) {
	t.Helper()
	master = startServer(t, redisproc.Options{})
	link, err := redisproc.StartProxy(master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	replica = startServer(t, redisproc.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(link.Port())}})
	waitOnline(t, master.Addr())
	return master, replica, link
}

// waitOnline waits until the server at addr reports a replica in sync.
func waitOnline(t *testing.T, addr string) {
	t.Helper()
	admin := client(t, addr)
	deadline := time.Now().Add(20 * time.Second)
	for info := ""; !strings.Contains(info, ",state=online,"); info, _ = admin.Info(context.Background(), "replication").Result() {
		if time.Now().After(deadline) {
			t.Fatalf("no replica of %s in sync: %s", addr, info)
		}
		time.Sleep(20 * time.Millisecond) // polling a server we do not control
	}
}

// stepRuns is what the handler of TestStepSurvivesFailover saw, per key.
// It is safe for concurrent use.
type stepRuns struct {
	mu       sync.Mutex       // guards the maps
	attempts map[string]int   // handler executions
	charges  map[string]int   // executions of the step's function
	firstErr map[string]error // Step's error in the key's first execution
}

// TestStepSurvivesFailover: a step's journal entry is acknowledged by a
// replica as a completion is, so that a failover does not silently lose
// it. A run charges (a step) and then fails (500: released, as a crashed
// run would leave its key to a retry). Eight keys run so while replication
// is healthy; then the replication link fails, eight more run; then the
// master is killed and its replica promoted, and every key is retried
// until it answers 201. A retry resumes its run from the journal: a step
// found there is not run again. No step may run again unless its first run
// was told that its entry was not acknowledged (Step's error matches
// idemstore.ErrUnreplicated). The link fails in two ways: frozen (the master
// does not notice), and down (the replica cannot re-authenticate and the
// master reports no connected replica, read by the store's next check,
// which must keep waiting).
func TestStepSurvivesFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	for _, down := range []bool{false, true} {
		t.Run(map[bool]string{false: "link frozen", true: "link down"}[down], func(t *testing.T) { stepFailover(t, down) })
	}
}

func stepFailover(t *testing.T, down bool) {
	master, replica, link := replicaThroughLink(t)
	front, err := redisproc.StartProxy(master.Addr()) // follows the promotion
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	store := New(client(t, front.Addr()))
	runs := &stepRuns{attempts: map[string]int{}, charges: map[string]int{}, firstErr: map[string]error{}}
	eng := idem.NewEngine(store)
	h := eng.Middleware(idemop.Operation{ID: "Charge", Method: http.MethodPost, Path: "/charges"})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(idemop.DefaultKeyHeader)
		runs.mu.Lock()
		runs.attempts[key]++
		first := runs.attempts[key] == 1
		runs.mu.Unlock()
		_, err := idem.Step(r.Context(), "charge", func(context.Context) (string, error) {
			runs.mu.Lock()
			runs.charges[key]++
			runs.mu.Unlock()
			return "ch_" + key, nil
		})
		if first {
			runs.mu.Lock()
			runs.firstErr[key] = err
			runs.mu.Unlock()
		}
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case first:
			http.Error(w, "shipping failed", http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	post := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":10}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(idemop.DefaultKeyHeader, key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	const n = 8
	var keys []string
	for _, phase := range []string{"healthy", "frozen"} {
		switch {
		case phase == "healthy":
		case down:
			if err := redisproc.CutLink(context.Background(), master.Addr(), replica); err != nil {
				t.Fatal(err)
			}
			if err := store.Check(context.Background()); err != nil { // what the store's next check reads
				t.Fatal(err)
			}
		default:
			link.Freeze() // the replica hears nothing more; the master does not notice
		}
		for i := range n {
			key := fmt.Sprintf("%s-%d", phase, i)
			keys = append(keys, key)
			if w := post(key); w.Code != http.StatusInternalServerError && w.Code != http.StatusServiceUnavailable {
				t.Fatalf("%s: first answer %d %s; want the handler's 500, or 503 from an unacknowledged step", key, w.Code, w.Body)
			}
		}
	}
	master.Kill()
	if err := redis.NewClient(&redis.Options{Addr: replica.Addr()}).ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	front.Retarget(replica.Addr())

	for _, key := range keys {
		deadline := time.Now().Add(20 * time.Second)
		for w := post(key); w.Code != http.StatusCreated; w = post(key) {
			// 503 while the store finds its new master and learns that it
			// has no replica; nothing else.
			if w.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("%s: retry after the failover answered %d %s", key, w.Code, w.Body)
			}
			time.Sleep(20 * time.Millisecond) // waiting for the store's next check of a server we replaced
		}
	}
	told, silent, healthyAcked := 0, 0, 0
	for _, key := range keys {
		ferr := runs.firstErr[key]
		unacked := errors.Is(ferr, idemstore.ErrUnreplicated)
		if ferr != nil && !unacked {
			t.Errorf("%s: first Step: %v; want nil or ErrUnreplicated", key, ferr)
		}
		if unacked {
			told++
		}
		if strings.HasPrefix(key, "healthy") && ferr == nil {
			healthyAcked++
		}
		if strings.HasPrefix(key, "frozen") && !unacked {
			t.Errorf("%s: first Step with the replication link failed: %v; want ErrUnreplicated", key, ferr)
		}
		if c := runs.charges[key]; c != 1 && !unacked {
			silent++
			t.Errorf("%s: the step ran %d times; its first run was told its journal entry was safe", key, c)
		}
	}
	t.Logf("steps told unacknowledged: %d of %d; charged again without a word: %d; healthy steps acknowledged: %d of %d", told, len(keys), silent, healthyAcked, n)
	// On a loaded machine a replica in sync may miss the timeout now and
	// then (which is told, and safe); most must be acknowledged.
	if healthyAcked < n/2 {
		t.Errorf("%d of %d steps acknowledged while replication was healthy; want most", healthyAcked, n)
	}
}

// TestStepLateReplica: a step written while a replica the store has not
// yet counted is attached (the store's check found none) is answered
// unacknowledged, as a completion is, and the steps after it wait for that
// replica: the count that catches a late replica for completions (one INFO
// replication after a batch's scripts) covers steps too.
func TestStepLateReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	ctx := context.Background()
	master := startServer(t, redisproc.Options{})
	admin := client(t, master.Addr())
	s := New(client(t, master.Addr()))
	if err := s.Check(ctx); err != nil { // the view: no replica
		t.Fatal(err)
	}
	fence := stepAcquire(t, s, "late", "t1", "f0000000000000000000000000000000000000000000000000000000000000001")
	if err := commitStep(s, "late", "t1", fence, "before", "0"); err != nil {
		t.Fatalf("step with no replica attached: %v", err)
	}
	replica := startServer(t, redisproc.Options{})
	if err := client(t, replica.Addr()).ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(master.Port())).Err(); err != nil {
		t.Fatal(err)
	}
	waitOnline(t, master.Addr())
	waits := redistest.CommandCalls(t, admin)["wait"]
	if err := commitStep(s, "late", "t1", fence, "unannounced", "1"); !errors.Is(err, idemstore.ErrUnreplicated) {
		t.Errorf("step with a replica attached since the check: %v; want ErrUnreplicated", err)
	}
	err := commitStep(s, "late", "t1", fence, "after", "2")
	if err != nil && !errors.Is(err, idemstore.ErrUnreplicated) { // a loaded machine may miss the timeout
		t.Errorf("step after the replica was counted: %v", err)
	}
	if n := redistest.CommandCalls(t, admin)["wait"] - waits; n != 1 {
		t.Errorf("%d WAIT for the steps after the replica was counted; want 1", n)
	}
	want := map[string][]byte{"before": []byte("0"), "unannounced": []byte("1"), "after": []byte("2")}
	if got, err := s.LoadSteps(ctx, "late", "t1"); err != nil || len(got) != len(want) {
		t.Errorf("journal %q, %v; want all three steps on the master", got, err)
	}
}

// TestStepOnClusterIsAcknowledged: on a Redis Cluster whose masters have a
// replica each, a step's journal write waits for the replica of its key's
// master (WAIT on that master, one per step written alone), and after a
// replica of one master is promoted (CLUSTER FAILOVER) the journal of every
// key is read back whole, on the new master as on the others.
func TestStepOnClusterIsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	ctx := context.Background()
	startServer(t, redisproc.Options{}) // skips (or fails under CI=true) without redis-server
	cluster, err := redisproc.StartCluster(ctx, 3, time.Second, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	if err := cluster.AddReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	waits := func() int64 {
		var n int64
		for _, m := range cluster.Nodes {
			n += redistest.CommandCalls(t, client(t, m.Addr()))["wait"]
		}
		return n
	}
	before := waits()
	const keys = 12
	fp := "f0000000000000000000000000000000000000000000000000000000000000001"
	for i := range keys {
		key := fmt.Sprintf("cluster-step-%d", i)
		fence := stepAcquire(t, s, key, "t-"+key, fp)
		err := commitStep(s, key, "t-"+key, fence, "charge", strconv.Itoa(i))
		if err != nil && !errors.Is(err, idemstore.ErrUnreplicated) { // a loaded machine may miss the timeout
			t.Fatalf("%s: step: %v", key, err)
		}
	}
	// One each, and one more on a master whose first step found step.lua
	// not yet loaded (NOSCRIPT: the EVAL goes with a WAIT of its own).
	if n := waits() - before; n < keys || n > keys+int64(len(cluster.Nodes)) {
		t.Errorf("%d WAIT on the masters for %d steps written one by one; want one each (and at most one more per master)", n, keys)
	}

	promoted := client(t, cluster.Replicas[0].Addr())
	if err := promoted.ClusterFailover(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for info := ""; !strings.Contains(info, "role:master") || !strings.Contains(info, ",state=online,"); info, _ = promoted.Info(ctx, "replication").Result() {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not promoted: %s", cluster.Replicas[0].Addr(), info)
		}
		time.Sleep(50 * time.Millisecond) // polling a server we do not control
	}
	rdb.ReloadState(ctx)
	for i := range keys {
		key := fmt.Sprintf("cluster-step-%d", i)
		var got map[string][]byte
		var err error
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) { // the client learns the new slot map
			if got, err = s.LoadSteps(ctx, key, "t-"+key); err == nil || time.Now().After(end) {
				break
			}
		}
		if err != nil || string(got["charge"]) != strconv.Itoa(i) {
			t.Errorf("%s: journal after the failover %q, %v; want charge=%d", key, got, err, i)
		}
	}
}

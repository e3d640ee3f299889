package e2e_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest/redisproc"
)

// TestLateReplicaIsWaitedFor: a replica that attaches
// after the store last read its master's replicas is waited for all the
// same. The store takes its view of a master without replicas; then a
// replica attaches (REPLICAOF, through a link the test can freeze) and is in
// sync; keys complete one by one; the link freezes (the master does not
// notice), more keys complete; the master is killed and the replica
// promoted. No key first answered a plain 2xx may run again: the store
// must either have a replica's acknowledgement or know, from the moment of
// the completion, that none was attached. The view is refreshed only every
// 30 s by default, so without that knowledge the frozen keys are answered
// plain and run again after the failover.
func TestLateReplicaIsWaitedFor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master and a replica")
	}
	ctx := context.Background()
	master := faultServerWith(t, redisproc.Options{})
	front, err := redisproc.StartProxy(master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	rdb := faultClient(t, front.Addr())
	runs := newFaultRuns()
	store := redisstore.New(rdb, failoverStoreOpts...)
	if err := store.Check(ctx); err != nil { // the view: no replica
		t.Fatal(err)
	}
	h := idem.NewEngine(store, idem.WithStoreTimeout(time.Second)).Middleware(faultOp)(faultHandler(runs, nil))

	first := map[string]string{} // key -> firstAnswer
	send := func(key string) { first[key] = firstAnswer(faultPost(h, key)) }
	send("before") // no replica exists: durable without one

	link, err := redisproc.StartProxy(master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	replica := faultServerWith(t, redisproc.Options{})
	if err := faultClient(t, replica.Addr()).ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(link.Port())).Err(); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, master.Addr(), 1)

	const n = 20
	plainAttached := 0
	for i := range n {
		key := fmt.Sprintf("attached-%d", i)
		send(key)
		if first[key] == "plain" {
			plainAttached++
		}
	}
	link.Freeze() // the replica hears nothing more; the master still counts it
	for i := range n {
		send(fmt.Sprintf("partitioned-%d", i))
	}
	master.Kill()
	promote(t, replica.Addr())
	front.Retarget(replica.Addr())

	counts := map[string]int{}
	reran := 0
	for key, a := range first {
		counts[a]++
		var w *httptest.ResponseRecorder
		faultEventually(t, 10*time.Second, "an answer other than 503 after the failover", func() bool {
			w = faultPost(h, key)
			return w.Code != 503
		})
		if n := runs.of(key); n != 1 && a == "plain" {
			reran++
			t.Errorf("%s: first answered a plain 2xx, then ran %d times in all: answered as durable without a replica's acknowledgement", key, n)
		}
		if a != "plain" && a != "degraded" {
			t.Errorf("%s: first answer %s; want plain or degraded", key, a)
		}
	}
	t.Logf("first answers: %v; plain answers that ran again: %d; plain while the replica was in sync: %d of %d", counts, reran, plainAttached, n)
	// The acknowledgement works once the store knows of the replica: at
	// most the completions that found it unannounced are degraded.
	if plainAttached < n/2 {
		t.Errorf("%d of %d first answers plain while the late replica was in sync; want most", plainAttached, n)
	}
}

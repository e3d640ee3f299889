package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/internal/pgtest"
)

// The crash and stale-owner tests need a server in another process: the
// test binary itself, run again as TestChildServer with the environment
// below. Its handler inserts a payment in the run's transaction, prints
// "inserted" and waits for a line on stdin before it answers: the parent
// kills or freezes it there.
const (
	envChild    = "PGSTORE_TEST_CHILD"    // "1" in the child
	envRecords  = "PGSTORE_TEST_RECORDS"  // the records' table
	envPayments = "PGSTORE_TEST_PAYMENTS" // the business table
)

// childLock is the lease of the child's operation: short, so that the tests
// wait little for it to lapse.
const childLock = time.Second

// TestChildServer is the child's server; it does nothing in a normal run.
func TestChildServer(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("the server half of the process tests")
	}
	pool := pgtest.Pool(t, 4)
	s := pgstore.New(pool, pgstore.WithTable(os.Getenv(envRecords)), pgstore.WithPurgeInterval(-1))
	stdin := bufio.NewReader(os.Stdin)
	h := paymentHandler(os.Getenv(envPayments), func(context.Context) {
		fmt.Println("inserted")
		_, _ = stdin.ReadString('\n')
	})
	op := *payOp
	op.Lock = childLock
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening", l.Addr())
	_ = http.Serve(l, serve(idem.NewEngine(s), &op, h)) // until killed
}

// child is a running TestChildServer.
type child struct {
	cmd    *exec.Cmd
	url    string
	lines  chan string // the child's stdout, line by line
	stdin  io.Writer
	stderr *bytes.Buffer
}

func startChild(t *testing.T, records, pay string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildServer$", "-test.v=false")
	cmd.Env = append(os.Environ(), envChild+"=1", envRecords+"="+records, envPayments+"="+pay)
	c := &child{cmd: cmd, lines: make(chan string, 16), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child's stderr:\n%s", c.stderr)
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	addr, ok := strings.CutPrefix(c.next(t), "listening ")
	if !ok {
		t.Fatalf("child did not start:\n%s", c.stderr)
	}
	c.url = "http://" + addr
	return c
}

// next returns the child's next line of output.
func (c *child) next(t *testing.T) string {
	t.Helper()
	line, ok := <-c.lines
	if !ok {
		t.Fatalf("child exited:\n%s", c.stderr)
	}
	return line
}

// postAsync posts key to url in the background; the answer comes on the
// returned channel.
func postAsync(t *testing.T, url, key string) <-chan [2]string {
	ch := make(chan [2]string, 1)
	go func() {
		st, body := post(t, http.DefaultClient, url, key)
		ch <- [2]string{fmt.Sprint(st), body}
	}()
	return ch
}

// takeover is a second instance in the test process: its operation waits
// for a live lease to lapse (Wait), so its request is the retry that comes
// after the lease. runs counts its handler's runs, each of which spends
// three times the lock after its INSERT (a slow call to another system):
// a live owner keeps the key it took over.
func takeover(t *testing.T, s *pgstore.Store, pay string, runs *atomic.Int64) *httptest.Server {
	op := *payOp
	op.Lock = childLock
	op.Wait = 30 * time.Second
	slow := func(context.Context) {
		runs.Add(1)
		time.Sleep(3 * childLock) // the scenario, not a synchronisation
	}
	srv := httptest.NewServer(serve(idem.NewEngine(s), &op, paymentHandler(pay, slow)))
	t.Cleanup(srv.Close)
	return srv
}

// TestCrashBeforeAnswer: the server process dies (SIGKILL) after the
// handler's INSERT and before it answers. Nothing it wrote stays, not even
// its claim: once PostgreSQL has seen its connections close (and rolled
// their transactions back), the retry runs the handler at once, without
// waiting for a lease (its operation does not wait: a 409 would fail the
// test), and once.
func TestCrashBeforeAnswer(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := payments(t, pool)
	a := startChild(t, records, pay)
	answer := postAsync(t, a.url, "crash")
	if line := a.next(t); line != "inserted" {
		t.Fatalf("child said %q", line)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	if got := <-answer; got[0] != "0" {
		t.Fatalf("the killed server answered %v", got)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows after the crash, want 0", n)
	}
	waitNoOpenTransaction(t, pool)
	var runs atomic.Int64
	op := *payOp
	op.Lock = childLock
	b := httptest.NewServer(serve(idem.NewEngine(s), &op, paymentHandler(pay, func(context.Context) { runs.Add(1) })))
	t.Cleanup(b.Close)
	st, body := post(t, b.Client(), b.URL, "crash")
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("retry = %d %s after %d runs; want 201 from one run", st, body, runs.Load())
	}
	if n := pgtest.Count(t, pool, pay, "fence > 1"); n != 1 || pgtest.Count(t, pool, pay, "true") != 1 {
		t.Fatalf("payment rows: %d of fence 2, %d in all; want exactly the retry's", n, pgtest.Count(t, pool, pay, "true"))
	}
	if st2, body2 := post(t, b.Client(), b.URL, "crash"); st2 != st || body2 != body || runs.Load() != 1 {
		t.Fatalf("replay = %d %s, runs %d", st2, body2, runs.Load())
	}
}

// waitNoOpenTransaction waits until no session of the database but the
// caller's is in a transaction: PostgreSQL has noticed that a killed
// process's connections closed and rolled their transactions back. It
// polls pg_stat_activity, for at most 10 s.
func waitNoOpenTransaction(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var open int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`).Scan(&open)
		switch {
		case err != nil:
			t.Fatal(err)
		case open == 0:
			return
		case time.Now().After(deadline):
			t.Fatalf("%d sessions still in a transaction 10 s after the crash", open)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStaleOwnerFrozen: the owner is frozen (SIGSTOP) after its INSERT,
// with its transaction open. Meanwhile a duplicate is answered 409 at once;
// once the transaction has been idle for the lock, the server ends it
// (idle_in_transaction_session_timeout, which the store sets to the lock)
// and a second instance's retry, waiting (Operation.Wait), claims the key
// and commits, although its handler spends three times the lock. On
// SIGCONT the first owner's completion commits nothing (its INSERT went
// with its transaction: exactly one row), and its client gets the second
// run's answer.
func TestStaleOwnerFrozen(t *testing.T) {
	pool := pgtest.Pool(t, 0)
	s, records := pgtest.Store(t, pool)
	pay := payments(t, pool)
	a := startChild(t, records, pay)
	answer := postAsync(t, a.url, "stale")
	if line := a.next(t); line != "inserted" {
		t.Fatalf("child said %q", line)
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	b := takeover(t, s, pay, &runs)
	dup := httptest.NewServer(serve(idem.NewEngine(s), payOp, paymentHandler(pay, func(context.Context) { runs.Add(1) })))
	t.Cleanup(dup.Close)
	if st, body := post(t, dup.Client(), dup.URL, "stale"); st != http.StatusConflict {
		t.Fatalf("a duplicate while the owner is frozen = %d %s, want 409", st, body)
	}
	st, body := post(t, b.Client(), b.URL, "stale") // waits for the server to end the frozen owner's transaction
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("takeover = %d %s after %d runs; want 201 from one run", st, body, runs.Load())
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(a.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	got := <-answer
	if got != [2]string{fmt.Sprint(st), body} {
		t.Fatalf("the stale owner's client got %v, want the takeover's %d %s", got, st, body)
	}
	if n := pgtest.Count(t, pool, pay, "true"); n != 1 || pgtest.Count(t, pool, pay, "fence > 1") != 1 {
		t.Fatalf("%d payment rows, want exactly the takeover's (fence 2): the stale INSERT must roll back", n)
	}
}

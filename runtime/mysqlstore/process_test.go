package mysqlstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/internal/mysqltest"
)

// The crash and stale-owner tests need a server in another process: the
// test binary itself, run again as TestChildServer with the environment
// below. Its handler inserts a payment in the run's transaction, prints
// "inserted" and waits for a line on stdin before it answers: the parent
// kills or freezes it there.
const (
	envChild    = "MYSQLSTORE_TEST_CHILD"    // "1" in the child
	envRecords  = "MYSQLSTORE_TEST_RECORDS"  // the records' table
	envPayments = "MYSQLSTORE_TEST_PAYMENTS" // the business table
)

// childLock is the lock of the child's operation: short, so that the
// server ends a frozen child's claim (idle_transaction_timeout, 1 s) soon.
const childLock = time.Second

// TestChildServer is the child's server; it does nothing in a normal run.
func TestChildServer(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("the server half of the process tests")
	}
	db := mysqltest.DB(t, 4)
	s := mysqlstore.New(db, mysqlstore.WithTable(os.Getenv(envRecords)), mysqlstore.WithPurgeInterval(-1))
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
// while the key is held (Wait), so its request is the retry that comes
// once the first owner's claim has ended. runs counts its handler's runs,
// each of which spends three times the lock after its INSERT (a slow call
// to another system): a live owner keeps the key it took.
func takeover(t *testing.T, s *mysqlstore.Store, pay string, runs *atomic.Int64) *httptest.Server {
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
// handler's INSERT and before it answers. Nothing it wrote stays: its
// connection closed, the database rolled back the claim and the INSERT
// together, with no lease left to wait out; the retry runs the handler
// once.
func TestCrashBeforeAnswer(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, records := mysqltest.Store(t, db)
	pay := payments(t, db)
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
	if n := mysqltest.Count(t, db, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows after the crash, want 0", n)
	}

	var runs atomic.Int64
	b := takeover(t, s, pay, &runs)
	st, body := post(t, b.Client(), b.URL, "crash")
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("retry = %d %s after %d runs; want 201 from one run", st, body, runs.Load())
	}
	if n := mysqltest.Count(t, db, pay, "id = ?", answerID(t, body)); n != 1 || mysqltest.Count(t, db, pay, "true") != 1 {
		t.Fatalf("payment rows: %d with the retry's id, %d in all; want exactly the retry's", n, mysqltest.Count(t, db, pay, "true"))
	}
	if st2, body2 := post(t, b.Client(), b.URL, "crash"); st2 != st || body2 != body || runs.Load() != 1 {
		t.Fatalf("replay = %d %s, runs %d", st2, body2, runs.Load())
	}
}

// TestStaleOwnerFrozen: the owner is frozen (SIGSTOP) after its INSERT,
// its transaction open; the database ends it once idle for the lock
// (idle_transaction_timeout), and a second instance, answered 409 until
// then, claims the key and commits, although its handler spends three
// times the lock. On SIGCONT the first owner's commit is
// refused (ErrNotOwner: its transaction is gone, and its INSERT with it:
// exactly one row), and its client gets the second run's answer.
func TestStaleOwnerFrozen(t *testing.T) {
	db := mysqltest.DB(t, 0)
	s, records := mysqltest.Store(t, db)
	pay := payments(t, db)
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
	st, body := post(t, b.Client(), b.URL, "stale") // 409s until the server ends the frozen owner's claim
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
	if n := mysqltest.Count(t, db, pay, "true"); n != 1 || mysqltest.Count(t, db, pay, "id = ?", answerID(t, body)) != 1 {
		t.Fatalf("%d payment rows, want exactly the takeover's: the stale INSERT must roll back", n)
	}
}

// answerID is the payment id of a 201's body, {"id":N}.
func answerID(t *testing.T, body string) int64 {
	t.Helper()
	var v struct{ ID int64 }
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.ID == 0 {
		t.Fatalf("answer %q: no payment id (%v)", body, err)
	}
	return v.ID
}

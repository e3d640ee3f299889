package sqlfamilytest

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

	idem "github.com/idemgen/idemgen/runtime"
)

// The crash and stale-owner scenarios need a server in another process:
// the test binary itself, run again with the environment below, where
// [Run] serves instead of testing. Its handler inserts a payment in the
// run's transaction, prints "inserted" and waits for a line on stdin
// before it answers: the parent kills or freezes it there.
const (
	envChild    = "SQLFAMILYTEST_CHILD"    // "1" in the child
	envRecords  = "SQLFAMILYTEST_RECORDS"  // the records' table
	envPayments = "SQLFAMILYTEST_PAYMENTS" // the business table
)

// childLock is the lock of the child's operation: short, so that the
// server ends a frozen child's claim (its idle-in-transaction timeout is
// the lock) soon.
const childLock = time.Second

// serveChild is the child's server, until it is killed.
func serveChild(t *testing.T, d Dialect) {
	db := d.Open(t, d.DSN(t), 4)
	s := db.NewStore(os.Getenv(envRecords))
	stdin := bufio.NewReader(os.Stdin)
	h := PaymentHandler(d, os.Getenv(envPayments), func(context.Context) {
		fmt.Println("inserted")
		_, _ = stdin.ReadString('\n')
	})
	op := PayOp()
	op.Lock = childLock
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening", l.Addr())
	_ = http.Serve(l, Serve(idem.NewEngine(s), &op, h)) // until killed
}

// child is a running server process.
type child struct {
	cmd    *exec.Cmd
	url    string
	lines  chan string // the child's stdout, line by line
	stdin  io.Writer
	stderr *bytes.Buffer
}

// startChild starts the child on the records table and the business
// table pay, killed when the test ends.
func startChild(t *testing.T, records, pay string) *child {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/") // the test that called Run
	cmd := exec.Command(os.Args[0], "-test.run=^"+top+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), envChild+"=1", envRecords+"="+records, envPayments+"="+pay)
	c := &child{cmd: cmd, lines: make(chan string, 16), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	cmd.SysProcAttr = dieWithParent()
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

// signal sends sig to the child.
func (c *child) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// postAsync posts key to url in the background; the answer comes on the
// returned channel.
func postAsync(t *testing.T, url, key string) <-chan [2]string {
	ch := make(chan [2]string, 1)
	go func() {
		st, body := Post(t, http.DefaultClient, url, key)
		ch <- [2]string{fmt.Sprint(st), body}
	}()
	return ch
}

// owner is a child whose handler has inserted its row, with its store's
// and business tables.
type owner struct {
	*child
	db           DB
	s            Store // a store of the test's own process on the child's table
	records, pay string
	answer       <-chan [2]string // the child's answer, when it comes
}

// ownerInserted starts a child on a store and a business table of the
// test's own and sends it a request with key; it returns once the child's
// handler has inserted its row (its transaction open).
func ownerInserted(t *testing.T, d Dialect, key string) *owner {
	t.Helper()
	o := &owner{db: d.Open(t, d.DSN(t), 0)}
	o.s, o.records = o.db.Store(t, StoreConfig{})
	o.pay = o.db.Payments(t)
	o.child = startChild(t, o.records, o.pay)
	o.answer = postAsync(t, o.url, key)
	if line := o.next(t); line != "inserted" {
		t.Fatalf("child said %q", line)
	}
	return o
}

// testCrashBeforeAnswer: the server process dies (SIGKILL) after the
// handler's INSERT and before it answers. Nothing it wrote stays, not even
// its claim: once the database has seen its connections close (and
// rolled their transactions back), the retry runs the handler at once,
// without waiting for a lease (its operation does not wait: a 409 would
// fail the test), and once.
func testCrashBeforeAnswer(t *testing.T, d Dialect) {
	a := ownerInserted(t, d, "crash")
	db, s, pay := a.db, a.s, a.pay
	a.signal(t, syscall.SIGKILL)
	_ = a.cmd.Wait()
	if got := <-a.answer; got[0] != "0" {
		t.Fatalf("the killed server answered %v", got)
	}
	if n := db.Count(t, pay, "true"); n != 0 {
		t.Fatalf("%d payment rows after the crash, want 0", n)
	}
	waitRolledBack(t, d, db, a.records, pay)
	var runs atomic.Int64
	op := PayOp()
	op.Lock = childLock
	b := httptest.NewServer(Serve(idem.NewEngine(s), &op, PaymentHandler(d, pay, func(context.Context) { runs.Add(1) })))
	t.Cleanup(b.Close)
	st, body := Post(t, b.Client(), b.URL, "crash")
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("retry = %d %s after %d runs; want 201 from one run", st, body, runs.Load())
	}
	if n := db.Count(t, pay, "id = "+d.Arg(1), AnswerID(t, body)); n != 1 || db.Count(t, pay, "true") != 1 {
		t.Fatalf("payment rows: %d with the retry's id, %d in all; want exactly the retry's", n, db.Count(t, pay, "true"))
	}
	if st2, body2 := Post(t, b.Client(), b.URL, "crash"); st2 != st || body2 != body || runs.Load() != 1 {
		t.Fatalf("replay = %d %s, runs %d", st2, body2, runs.Load())
	}
}

// testStaleOwnerFrozen: the owner is frozen (SIGSTOP) after its INSERT,
// with its transaction open. Meanwhile a duplicate is answered 409 at
// once; once the transaction has been idle for the lock, the server ends
// it (the store sets the server's idle-in-transaction timeout to the lock)
// and a second instance's retry, waiting (Operation.Wait), claims the key
// and commits, although its handler spends three times the lock. On
// SIGCONT the first owner's completion commits nothing (its INSERT went
// with its transaction: exactly one row), and its client gets the second
// run's answer.
func testStaleOwnerFrozen(t *testing.T, d Dialect) {
	a := ownerInserted(t, d, "stale")
	db, s, pay := a.db, a.s, a.pay
	a.signal(t, syscall.SIGSTOP)
	var runs atomic.Int64
	op := PayOp()
	dup := httptest.NewServer(Serve(idem.NewEngine(s), &op, PaymentHandler(d, pay, func(context.Context) { runs.Add(1) })))
	t.Cleanup(dup.Close)
	if st, body := Post(t, dup.Client(), dup.URL, "stale"); st != http.StatusConflict {
		t.Fatalf("a duplicate while the owner is frozen = %d %s, want 409", st, body)
	}
	// The takeover waits while the key is held (Wait), so its request is
	// the retry that comes once the frozen owner's claim has ended; its
	// handler spends three times the lock after its INSERT (a slow call
	// to another system): a live owner keeps the key it took.
	takeover := op
	takeover.Lock, takeover.Wait = childLock, 30*time.Second
	b := httptest.NewServer(Serve(idem.NewEngine(s), &takeover, PaymentHandler(d, pay, func(context.Context) {
		runs.Add(1)
		time.Sleep(3 * childLock) // the scenario, not a synchronisation
	})))
	t.Cleanup(b.Close)
	st, body := Post(t, b.Client(), b.URL, "stale") // waits for the server to end the frozen owner's transaction
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("takeover = %d %s after %d runs; want 201 from one run", st, body, runs.Load())
	}
	a.signal(t, syscall.SIGCONT)
	if _, err := io.WriteString(a.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	got := <-a.answer
	if got != [2]string{fmt.Sprint(st), body} {
		t.Fatalf("the stale owner's client got %v, want the takeover's %d %s", got, st, body)
	}
	if n := db.Count(t, pay, "true"); n != 1 || db.Count(t, pay, "id = "+d.Arg(1), AnswerID(t, body)) != 1 {
		t.Fatalf("%d payment rows, want exactly the takeover's: the stale INSERT must roll back", n)
	}
}

// waitRolledBack waits (at most 10 s) until no session holds a lock on
// tables: the server has noticed that a killed process's connections
// closed and rolled their transactions back.
func waitRolledBack(t *testing.T, d Dialect, db DB, tables ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, table := range tables {
		for d.Locked(t, db, table) {
			if time.Now().After(deadline) {
				t.Fatalf("%s still locked 10 s after the crash", table)
			}
			time.Sleep(10 * time.Millisecond) // polling the server, not synchronising goroutines
		}
	}
}

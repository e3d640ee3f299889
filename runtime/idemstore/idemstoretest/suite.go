package idemstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Harness is a store under test and what the suite needs to know of it.
// Only New is required.
type Harness struct {
	// New returns the store a check runs on. Each check calls it once,
	// before anything else, and uses keys of its own, so New may return a
	// fresh store (a new key prefix, table or schema) or the same one each
	// time.
	New func() (idemstore.Store, error)

	// Advance, if set, moves the store's clock forward by d: miniredis's
	// FastForward, or a fake clock the store reads. Without it, a check
	// that needs a lease or a retention to lapse waits for it in real
	// time, polling the store (at most Timeout per wait), and the checks
	// of exact boundaries are skipped.
	Advance func(d time.Duration)

	// Lease is the lease, and the retention, of the records whose lapse a
	// check waits for. Default: 30s with Advance, else 500ms, which a store
	// on a real server times well enough; a store whose clock is coarser
	// needs a longer one.
	Lease time.Duration

	// Timeout bounds each wait for a lapse, beyond the lapse itself, and
	// every store call. Default: 10s.
	Timeout time.Duration

	// TxWrite and TxMarked, for a TxStore, let the transactional checks
	// prove that a handler's own writes commit with the record and only
	// then: TxWrite writes mark through the run's transaction, which ctx
	// carries (RunTx.Context's; with pgstore, an INSERT through
	// pgstore.Tx(ctx)), and TxMarked tells whether mark is committed, read
	// outside any run. Unset, those checks test the record alone.
	TxWrite  func(ctx context.Context, mark string) error
	TxMarked func(ctx context.Context, mark string) (bool, error)
}

// Run runs every check of the suite against the store of h, each as a
// subtest of t named after the check; the checks of a TxStore, and of a
// StepStore, are skipped for a store that is not one.
func Run(t *testing.T, h Harness) {
	t.Helper()
	h, err := h.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			ch.run(newChecker(t, h, ch.name))
		})
	}
}

// Check runs every check of the suite against the store of h, as [Run]
// does, and returns nil if the store passed them all, else an error that
// joins one *[CheckError] per check it failed. Tests of the suite itself
// use it, as testing/fstest.TestFS returns its findings.
func Check(h Harness) error {
	h, err := h.withDefaults()
	if err != nil {
		return err
	}
	var errs []error
	for _, ch := range checks {
		r := &recorder{}
		done := make(chan struct{})
		go func() { // a fatal problem ends this goroutine, as t.Fatal does
			defer close(done)
			ch.run(newChecker(r, h, ch.name))
		}()
		<-done
		if len(r.problems) > 0 {
			errs = append(errs, &CheckError{Check: ch.name, Problems: r.problems})
		}
	}
	return errors.Join(errs...)
}

// CheckError is a check a store failed, as [Check] reports it.
type CheckError struct {
	Check    string   // the check's name, as Run names its subtest
	Problems []string // what went wrong, in order
}

// Error implements error.
func (e *CheckError) Error() string {
	return "idemstoretest: " + e.Check + ": " + strings.Join(e.Problems, "; ")
}

// withDefaults returns h with its defaults set, or why it cannot run.
func (h Harness) withDefaults() (Harness, error) {
	if h.New == nil {
		return h, errors.New("idemstoretest: Harness.New is nil: it returns the store under test")
	}
	if (h.TxWrite == nil) != (h.TxMarked == nil) {
		return h, errors.New("idemstoretest: Harness.TxWrite and TxMarked go together: set both or neither")
	}
	if h.Lease <= 0 {
		h.Lease = 500 * time.Millisecond
		if h.Advance != nil {
			h.Lease = 30 * time.Second
		}
	}
	if h.Timeout <= 0 {
		h.Timeout = 10 * time.Second
	}
	return h, nil
}

// reporter is what a check reports to: a *testing.T under Run, a recorder
// under Check.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
}

// recorder is the reporter of Check: it keeps the problems, and ends the
// check's goroutine on a fatal one or a skip.
type recorder struct{ problems []string }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skip(...any) { runtime.Goexit() }

// check is one check of the suite.
type check struct {
	name string
	run  func(c *checker)
}

// checker is a check's view of the store under test.
type checker struct {
	reporter
	h     Harness
	name  string
	store idemstore.Store // from h.New, once the check asked for it
	n     int             // keys made so far
	tag   string          // random, so that keys of two runs never meet
}

func newChecker(r reporter, h Harness, name string) *checker {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &checker{reporter: r, h: h, name: name, tag: hex.EncodeToString(b[:])}
}

// s returns the store under test, asking h.New for it the first time.
func (c *checker) s() idemstore.Store {
	c.Helper()
	if c.store == nil {
		s, err := c.h.New()
		if err != nil || s == nil {
			c.Fatalf("Harness.New: %v, %v", s, err)
		}
		c.store = s
	}
	return c.store
}

// key returns a key no other check and no other run uses, composed as the
// engine composes keys (so it holds the ':', '\' and '~' they hold).
func (c *checker) key() string {
	c.n++
	return idemstore.RecordKeyIn("idemstoretest", c.name, `scope:\`+c.tag, fmt.Sprintf("key-%d", c.n))
}

// ctx returns the context of a store call, bounded by the timeout.
func (c *checker) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.h.Timeout)
}

// token returns a new owner token.
func token() string { return rand.Text() }

// Fingerprints, as the engine makes them: hex SHA-256.
const (
	fpA = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1"
	fpB = "b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2"
)

package ogene2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/ogene2e/api"
	"github.com/idemgen/idemgen/internal/pgtest"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// The environment of the test binary started as a server process
// (serverProcess): it serves ogen's server behind the layer at
// envServe, on the PostgreSQL records table envRecords, and its handler
// writes the key into envOrders through the run's transaction; with
// envHang=1 it then says "running" on its standard output and never
// answers, for the test to kill it.
const (
	envServe   = "OGENE2E_SERVE"
	envRecords = "OGENE2E_RECORDS"
	envOrders  = "OGENE2E_ORDERS"
	envHang    = "OGENE2E_HANG"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(envServe); addr != "" {
		if err := serverProcess(addr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// serverProcess is the server process's main.
func serverProcess(addr string) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	store := pgstore.New(pool, pgstore.WithTable(os.Getenv(envRecords)), pgstore.WithPurgeInterval(-1))
	orders, hang := os.Getenv(envOrders), os.Getenv(envHang) == "1"
	h := &shop{write: func(ctx context.Context, key string) error {
		if _, err := pgstore.Tx(ctx).Exec(ctx, "INSERT INTO "+orders+" (key) VALUES ($1)", key); err != nil {
			return err
		}
		if hang {
			fmt.Println("running")
			select {} // until the test kills the process
		}
		return nil
	}}
	srv, err := api.NewServer(h)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("listening")
	return http.Serve(ln, api.WithIdempotency(srv, store))
}

// serverCmd is a server process the test started.
type serverCmd struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

// startServer starts the test binary as a server process (see envServe)
// and waits until it listens.
func startServer(t *testing.T, env ...string) *serverCmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serverCmd{cmd: cmd, lines: bufio.NewScanner(out)}
	t.Cleanup(s.kill)
	s.waitFor(t, "listening")
	return s
}

// waitFor waits for the line want on the process's standard output.
func (s *serverCmd) waitFor(t *testing.T, want string) {
	t.Helper()
	for s.lines.Scan() {
		if s.lines.Text() == want {
			return
		}
	}
	t.Fatalf("the server process ended before it said %q", want)
}

// kill kills the process (SIGKILL) and waits for its end.
func (s *serverCmd) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// TestClientAgainstAKilledServer: the client's call reaches a server
// process that is killed (SIGKILL) in the middle of the run, after the
// handler wrote through the run's transaction; a new process starts on the
// same address. The client retries through the refused connections, the
// killed run's transaction is rolled back with its claim, and the retry
// runs: the call gets its answer, and one write is committed.
func TestClientAgainstAKilledServer(t *testing.T) {
	pool := pgtest.Pool(t, 4)
	_, records := pgtest.Store(t, pool)
	orders := pgtest.Name(t) + "_orders"
	pgtest.Exec(t, pool, "CREATE TABLE "+orders+" (key text NOT NULL)")
	t.Cleanup(func() { pgtest.Drop(t, pool, orders) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	env := []string{envServe + "=" + addr, envRecords + "=" + records, envOrders + "=" + orders}

	first := startServer(t, append(env, envHang+"=1")...)
	c, err := api.NewIdempotentClient("http://"+addr, fastCaller(), api.WithClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		order *api.Order
		err   error
	}
	done := make(chan result, 1)
	go func() {
		order, err := c.CreateOrder(context.Background(), &api.NewOrder{Item: "book"}, api.CreateOrderParams{IdempotencyKey: "killed-1"})
		done <- result{order, err}
	}()
	first.waitFor(t, "running")
	first.kill()
	startServer(t, env...)

	r := <-done
	if r.err != nil {
		t.Fatalf("the call: %v, want its answer", r.err)
	}
	if r.order.Item != "book" {
		t.Errorf("the answer %+v, want the order of a book", r.order)
	}
	if got := pgtest.Count(t, pool, orders, "key = $1", "killed-1"); got != 1 {
		t.Errorf("%d writes committed, want 1 (the killed run's rolled back)", got)
	}
}

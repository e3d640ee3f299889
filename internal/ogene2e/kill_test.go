package ogene2e_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/ogene2e/api"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore/mysqltest"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/redistest"
)

// The environment of the test binary started as a server process
// (serverProcess): it serves ogen's server behind the layer at envServe,
// on Redis (REDIS_URL) under the key prefix envRedisPrefix when that is
// set, else on the records table envRecords of PostgreSQL (DATABASE_URL)
// or, with envMariaDB=1, MariaDB (MYSQL_DSN), where its handler writes the
// key into the table envOrders through the run's transaction. With
// envHang=1 the handler then says "running" on its standard output and
// never answers, for the test to kill it. Each run first says "recovered"
// when it took over a dead run's lease, else "fresh".
const (
	envServe       = "OGENE2E_SERVE"
	envRedisPrefix = "OGENE2E_REDIS_PREFIX"
	envRecords     = "OGENE2E_RECORDS"
	envOrders      = "OGENE2E_ORDERS"
	envHang        = "OGENE2E_HANG"
	envMariaDB     = "OGENE2E_MARIADB"
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
	store, write, err := processStore()
	if err != nil {
		return err
	}
	hang := os.Getenv(envHang) == "1"
	h := &shop{write: func(ctx context.Context, key string) error {
		if err := write(ctx, key); err != nil {
			return err
		}
		if info, _ := idem.FromContext(ctx); info.Recovered {
			fmt.Println("recovered")
		} else {
			fmt.Println("fresh")
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

// processStore is the server process's store, and what its handler writes
// in a run (nothing on Redis).
func processStore() (idemstore.Store, func(ctx context.Context, key string) error, error) {
	if prefix := os.Getenv(envRedisPrefix); prefix != "" {
		opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
		if err != nil {
			return nil, nil, err
		}
		write := func(context.Context, string) error { return nil }
		return redisstore.New(redis.NewClient(opt), redisstore.WithPrefix(prefix)), write, nil
	}
	orders, records := os.Getenv(envOrders), os.Getenv(envRecords)
	if os.Getenv(envMariaDB) == "1" {
		cfg, err := mysql.ParseDSN(os.Getenv("MYSQL_DSN"))
		if err != nil {
			return nil, nil, err
		}
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return nil, nil, err
		}
		write := func(ctx context.Context, key string) error {
			_, err := mysqlstore.Tx(ctx).ExecContext(ctx, "INSERT INTO `"+orders+"` (k) VALUES (?)", key)
			return err
		}
		return mysqlstore.New(db, mysqlstore.WithTable(records), mysqlstore.WithPurgeInterval(-1)), write, nil
	}
	pool, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		return nil, nil, err
	}
	write := func(ctx context.Context, key string) error {
		_, err := pgstore.Tx(ctx).Exec(ctx, "INSERT INTO "+orders+" (key) VALUES ($1)", key)
		return err
	}
	return pgstore.New(pool, pgstore.WithTable(records), pgstore.WithPurgeInterval(-1)), write, nil
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

// next returns the process's next line of standard output.
func (s *serverCmd) next(t *testing.T) string {
	t.Helper()
	if !s.lines.Scan() {
		t.Fatal("the server process ended")
	}
	return s.lines.Text()
}

// kill kills the process (SIGKILL) and waits for its end.
func (s *serverCmd) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// killCase is a store for TestClientAgainstAKilledServer: env configures
// the server process for it, and check, after the call, what it committed
// and what the restarted process said.
type killCase struct {
	name  string
	setup func(t *testing.T) (env []string, check func(t *testing.T, restarted *serverCmd))
}

var killCases = []killCase{
	// The killed run's transaction is rolled back with its claim when its
	// connection drops: the retry runs, and one write is committed.
	{"postgres", func(t *testing.T) ([]string, func(*testing.T, *serverCmd)) {
		pool := pgtest.Pool(t, 4)
		_, records := pgtest.Store(t, pool)
		orders := pgtest.Name(t) + "_orders"
		pgtest.Exec(t, pool, "CREATE TABLE "+orders+" (key text NOT NULL)")
		t.Cleanup(func() { pgtest.Drop(t, pool, orders) })
		return []string{envRecords + "=" + records, envOrders + "=" + orders}, func(t *testing.T, _ *serverCmd) {
			if got := pgtest.Count(t, pool, orders, "key = $1", "killed-1"); got != 1 {
				t.Errorf("%d writes committed, want 1 (the killed run's rolled back)", got)
			}
		}
	}},
	{"mariadb", func(t *testing.T) ([]string, func(*testing.T, *serverCmd)) {
		db := mysqltest.DB(t, 4)
		_, records := mysqltest.Store(t, db)
		orders := mysqltest.Name(t) + "_orders"
		mysqltest.Exec(t, db, "CREATE TABLE `"+orders+"` (k VARCHAR(64) NOT NULL) ENGINE=InnoDB")
		t.Cleanup(func() { mysqltest.Drop(t, db, orders) })
		return []string{envMariaDB + "=1", envRecords + "=" + records, envOrders + "=" + orders}, func(t *testing.T, _ *serverCmd) {
			if got := mysqltest.Count(t, db, orders, "k = ?", "killed-1"); got != 1 {
				t.Errorf("%d writes committed, want 1 (the killed run's rolled back)", got)
			}
		}
	}},
	// The killed run's lease outlives it: the retries are answered 409
	// until it lapses (the operation's lock), and the next takes it over.
	{"redis", func(t *testing.T) ([]string, func(*testing.T, *serverCmd)) {
		_, prefix := redistest.Keyspace(t)
		return []string{envRedisPrefix + "=" + prefix}, func(t *testing.T, restarted *serverCmd) {
			if got := restarted.next(t); got != "recovered" {
				t.Errorf("the restarted process's run said %q, want recovered (a takeover of the dead run's lease)", got)
			}
		}
	}},
}

// TestClientAgainstAKilledServer: the client's call reaches a server
// process that is killed (SIGKILL) in the middle of the run; a new one
// starts on the same address. The client retries through the refused
// connections (and, on Redis, the 409s of the dead run's lease) and the
// call gets its answer from the run that follows.
func TestClientAgainstAKilledServer(t *testing.T) {
	for _, kc := range killCases {
		t.Run(kc.name, func(t *testing.T) {
			env, check := kc.setup(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			if err := ln.Close(); err != nil {
				t.Fatal(err)
			}
			env = append(env, envServe+"="+addr)

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
			restarted := startServer(t, env...)

			r := <-done
			if r.err != nil {
				t.Fatalf("the call: %v, want its answer", r.err)
			}
			if r.order.Item != "book" {
				t.Errorf("the answer %+v, want the order of a book", r.order)
			}
			check(t, restarted)
		})
	}
}

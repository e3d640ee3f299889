package mysqltest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" driver of database/sql
)

// Server is a private MariaDB (or MySQL) server that a test starts, stops,
// kills and restarts: mariadbd on a loopback port over a data directory of
// its own in a temporary directory. The data directory starts empty and
// the server runs with --skip-grant-tables (any user may connect, and may
// do anything): a throwaway server, up in about a second, without
// mariadb-install-db. As root it runs as an unprivileged user (MYSQL_USER,
// set by scripts/test.sh, else mysql), since mariadbd refuses root.
type Server struct {
	bin  string   // mariadbd
	dir  string   // the data directory's parent: data/, the socket, server.log
	args []string // the server's extra options
	port int
	cred *syscall.Credential // nil: run as the current user
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartServer creates and starts a private server with the options args
// (such as "--innodb-flush-log-at-trx-commit=2"), stopped and removed when
// the test ends, with an empty database idem. Without the server's binary
// (MYSQLD, or mariadbd or mysqld in /usr/sbin or on PATH) it skips the
// test, or fails it when CI=true.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := serverBin()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("mariadbd not found, and CI=true requires it: run scripts/test.sh")
		}
		t.Skip("mariadbd not found (set MYSQLD)")
	}
	// A directory of its own right under the temporary directory (which
	// every user may traverse), rather than t.TempDir(), whose parents are
	// private to the test's user.
	dir, err := os.MkdirTemp("", "mysqltest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{bin: bin, dir: dir, args: args}
	if err := os.Mkdir(s.data(), 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		name := os.Getenv("MYSQL_USER")
		if name == "" {
			name = "mysql"
		}
		u, err := user.Lookup(name)
		if err != nil {
			t.Skipf("running as root, and no user %s to run mariadbd as: %v", name, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, d := range []string{s.dir, s.data()} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	db, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE IF NOT EXISTS idem"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return s
}

// DSN is the server's DSN, for database idem.
func (s *Server) DSN() string { return s.dsn("idem") }

func (s *Server) dsn(db string) string {
	return fmt.Sprintf("idem@tcp(127.0.0.1:%d)/%s", s.port, db)
}

// Addr is the server's address, host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Start starts the server and waits until it accepts connections (at most
// 60 s).
func (s *Server) Start() error {
	args := append([]string{
		"--no-defaults",
		"--datadir=" + s.data(),
		"--tmpdir=" + s.dir, // not /tmp, which the server's user may not write
		"--socket=" + filepath.Join(s.dir, "sock"),
		"--pid-file=" + filepath.Join(s.dir, "pid"),
		"--log-error=" + filepath.Join(s.dir, "server.log"),
		"--port=" + strconv.Itoa(s.port),
		"--bind-address=127.0.0.1",
		"--skip-grant-tables",
		"--skip-name-resolve",
		"--max-connections=400",
		"--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=16M",
	}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %v", s.bin, err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()
	db, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("mariadbd exited: %s\n%s\n%s", cmd.ProcessState, out.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("mariadbd did not accept connections in 60 s: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond) // waiting for an external process to come up, not test synchronisation
	}
}

// Stop stops the server (SIGTERM: sessions are cut, open transactions roll
// back) and waits until it has exited.
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM) }

// Kill kills the server (SIGKILL: a crash; crash recovery runs at the next
// Start) and waits until it has exited.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil {
		return errors.New("mysqltest: server not started")
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("mysqltest: mariadbd did not stop in 60 s; killed")
	}
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// serverBin is MYSQLD, or mariadbd or mysqld, or "".
func serverBin() string {
	if b := os.Getenv("MYSQLD"); b != "" {
		return b
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin"} {
			if p := filepath.Join(dir, name); fileExists(p) {
				return p
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

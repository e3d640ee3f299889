package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
)

// Server is a private PostgreSQL cluster that a test starts, stops and
// restarts: initdb in a temporary directory, a postgres process on a
// loopback port. As root it runs as an unprivileged user (PG_USER, set by
// scripts/test.sh, else postgres), since PostgreSQL refuses root.
type Server struct {
	bin      string // directory of initdb, pg_ctl
	dir      string // the cluster's directory: data/, the socket, server.log
	port     int
	cred     *syscall.Credential // nil: run as the current user
	settings []string            // "name=value", given to the server with -c
}

// StartServer creates and starts a private cluster, stopped and removed
// when the test ends. Without PostgreSQL's binaries (PG_BIN, or
// /usr/lib/postgresql/*/bin) it skips the test, or fails it when CI=true.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return StartServerWith(t, "fsync=off")
}

// StartServerWith is [StartServer] with settings, each "name=value" (for
// example "synchronous_commit=off"), given to the server on the command
// line; without "fsync=off" among them the server flushes to disk, as in
// production.
func StartServerWith(t testing.TB, settings ...string) *Server {
	t.Helper()
	bin := binDir()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL's initdb not found, and CI=true requires it: run scripts/test.sh")
		}
		t.Skip("PostgreSQL's initdb not found (set PG_BIN)")
	}
	// A directory of its own right under the temporary directory (which
	// every user may traverse), rather than t.TempDir(), whose parents are
	// private to the test's user.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{bin: bin, dir: dir, settings: settings}
	if os.Getuid() == 0 {
		name := os.Getenv("PG_USER")
		if name == "" {
			name = "postgres"
		}
		u, err := user.Lookup(name)
		if err != nil {
			t.Skipf("running as root, and no user %s to run PostgreSQL as: %v", name, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(s.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "idem", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
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
	return s
}

// URL is the cluster's connection URL.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://idem@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", s.port, s.dir)
	for _, set := range s.settings {
		opts += " -c " + set
	}
	if out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "30", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server (fast shutdown: sessions are cut, open transactions
// roll back) and waits until it is down.
func (s *Server) Stop() error {
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// Crash stops the server at once (immediate shutdown: no checkpoint, as
// after a power loss of the server's process; what the disk had is what
// recovery finds) and waits until it is down.
func (s *Server) Crash() error {
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
	return nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// RequirePassword creates the login role user with password, and has the
// server ask every user but idem (the cluster's superuser, still trusted)
// for its password on TCP from then on. It returns the URL that logs in as
// user with password.
func (s *Server) RequirePassword(t testing.TB, user, password string) string {
	t.Helper()
	pool := PoolOf(t, s.URL(), 1)
	Exec(t, pool, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", user, password))
	pool.Close()
	hba := "local all all trust\nhost all idem 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(s.data(), "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := s.run("pg_ctl", "-D", s.data(), "reload"); err != nil {
		t.Fatalf("pg_ctl reload: %v\n%s", err, out)
	}
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/postgres?sslmode=disable", user, password, s.port)
}

// run runs one of PostgreSQL's programs as the server's user.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, prog), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// binDir is PG_BIN, or the newest /usr/lib/postgresql/*/bin, or "".
func binDir() string {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// Package redisproc runs redis-server as a child process on a free loopback
// port, for the load harness and for tests that must kill and restart Redis.
// It never binds anything but 127.0.0.1.
package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound is returned by [Start] when the redis-server binary is not on
// PATH (or at Options.Path).
var ErrNotFound = errors.New("redisproc: redis-server not found")

// Options configure [Start].
type Options struct {
	// Path of redis-server; "" looks it up on PATH.
	Path string
	// Dir is the server's working directory (AOF, nodes.conf, log). ""
	// creates a temporary one that Stop removes.
	Dir string
	// Port to listen on; 0 picks a free loopback port.
	Port int
	// Persist turns on the append-only file with fsync on every write, so a
	// killed server keeps every acknowledged write when restarted. Off, the
	// default, the server keeps nothing on disk.
	Persist bool
	// Args are extra redis-server arguments, such as
	// "--cluster-enabled", "yes".
	Args []string
	// StartTimeout bounds the wait for the server to answer PING
	// (default 10s).
	StartTimeout time.Duration
	// Sentinel, when set, runs a Sentinel (redis-server --sentinel) instead
	// of a server, with this configuration (sentinel monitor ... lines),
	// written to sentinel.conf in Dir, which the Sentinel rewrites.
	Sentinel string
	// CPUs, when set, pins the server to these CPUs (a taskset -c list
	// such as "1" or "2-3"), so that it does not compete with the process
	// that drives it. It needs taskset (util-linux) on PATH.
	CPUs string
}

// Server is a redis-server child process. Its methods are safe for
// concurrent use.
type Server struct {
	opts   Options
	path   string
	tmpDir bool // opts.Dir was created by Start and is removed by Stop

	mu   sync.Mutex // guards cmd and done
	cmd  *exec.Cmd  // the running process, nil when killed
	done chan error // receives the result of cmd.Wait once
}

// Start starts redis-server as opts say and waits until it answers PING.
func Start(ctx context.Context, opts Options) (*Server, error) {
	path := opts.Path
	if path == "" {
		path = "redis-server"
	}
	path, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	s := &Server{opts: opts, path: path}
	if s.opts.Dir == "" {
		dir, err := os.MkdirTemp("", "idem-redis-")
		if err != nil {
			return nil, fmt.Errorf("redisproc: %w", err)
		}
		s.opts.Dir, s.tmpDir = dir, true
	}
	// A port picked free may be taken before redis-server binds it; try a
	// few times.
	for attempt := 0; ; attempt++ {
		if opts.Port == 0 {
			if s.opts.Port, err = FreePort(); err != nil {
				s.cleanup()
				return nil, err
			}
		}
		err = s.start(ctx)
		if err == nil {
			return s, nil
		}
		if opts.Port != 0 || attempt == 4 || ctx.Err() != nil {
			s.cleanup()
			return nil, err
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that nobody listened on a moment
// ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisproc: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.opts.Port)) }

// Port is the server's port.
func (s *Server) Port() int { return s.opts.Port }

// Dir is the server's working directory.
func (s *Server) Dir() string { return s.opts.Dir }

// start runs the process and waits for PING. Callers must not hold mu.
func (s *Server) start(ctx context.Context) error {
	args := []string{
		"--port", strconv.Itoa(s.opts.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--dir", s.opts.Dir,
		"--logfile", "redis.log",
		"--protected-mode", "yes",
	}
	if s.opts.Persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, s.opts.Args...)
	if s.opts.Sentinel != "" {
		conf := filepath.Join(s.opts.Dir, "sentinel.conf")
		if _, err := os.Stat(conf); err != nil {
			if err := os.WriteFile(conf, []byte(s.opts.Sentinel), 0o600); err != nil {
				return fmt.Errorf("redisproc: %w", err)
			}
		}
		args = append([]string{conf, "--sentinel"}, args...)
	}
	name := s.path
	if s.opts.CPUs != "" {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			return fmt.Errorf("redisproc: pin to CPUs %s: %w", s.opts.CPUs, err)
		}
		name, args = taskset, append([]string{"-c", s.opts.CPUs, s.path}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = s.opts.Dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisproc: start %s: %w", s.path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	deadline := time.Now().Add(s.opts.StartTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := rdb.Ping(ctx).Err(); err == nil {
			return nil
		}
		select {
		case err := <-done:
			done <- err // keep it for Kill
			s.Kill()
			log, _ := os.ReadFile(filepath.Join(s.opts.Dir, "redis.log"))
			return fmt.Errorf("redisproc: redis-server on port %d exited: %v\n%s%s", s.opts.Port, err, stderr.Bytes(), log)
		case <-ctx.Done():
			s.Kill()
			return fmt.Errorf("redisproc: waiting for redis-server: %w", ctx.Err())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redisproc: redis-server on port %d did not answer PING within %v", s.opts.Port, s.opts.StartTimeout)
		}
	}
}

// Kill kills the server with SIGKILL, as a crash would, and waits until the
// process is gone. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts a killed server again on the same port and directory
// (with Persist, it reloads its append-only file) and waits for PING.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		return errors.New("redisproc: restart: server is running")
	}
	return s.start(ctx)
}

// Stop kills the server and removes its directory if Start created it.
func (s *Server) Stop() {
	s.Kill()
	s.cleanup()
}

func (s *Server) cleanup() {
	if s.tmpDir {
		_ = os.RemoveAll(s.opts.Dir)
	}
}

//go:build unix

package redisproc

import (
	"errors"
	"syscall"
)

// Pause stops the server with SIGSTOP, as a hung host or a stalled VM
// would: its connections stay open and nothing is answered until Resume.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisproc: server is not running")
	}
	return s.cmd.Process.Signal(sig)
}

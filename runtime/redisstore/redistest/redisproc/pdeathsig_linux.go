package redisproc

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the server when its parent
// dies, so a harness killed with SIGKILL leaves no redis-server behind.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

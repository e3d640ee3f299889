package sqlfamilytest

import "syscall"

// dieWithParent has the child killed when the test process dies, as a
// test that times out does without running its cleanups.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package sqlfamilytest

import "syscall"

// dieWithParent: only Linux kills a child with its parent; elsewhere a
// child outlives a test that times out.
func dieWithParent() *syscall.SysProcAttr { return nil }

//go:build !linux

package redisproc

import "os/exec"

// setParentDeathSignal does nothing outside Linux: the caller's deferred
// Stop is the only cleanup there.
func setParentDeathSignal(*exec.Cmd) {}

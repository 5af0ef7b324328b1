//go:build !linux

package clibridge

import "syscall"

// harnessSysProcAttr starts a harness in its own process group (the turn
// kills the group). Only Linux can tie its life to its parent's
// (Pdeathsig): elsewhere a supervisor killed mid-turn leaves it running.
func harnessSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

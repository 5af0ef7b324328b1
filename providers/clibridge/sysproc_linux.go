package clibridge

import "syscall"

// harnessSysProcAttr starts a harness in its own process group (the turn
// kills the group) and has the kernel SIGKILL it when the process that
// started it dies: a supervisor killed mid-turn (SIGKILL, OOM) leaves no
// harness behind to go on calling its model unmetered, or to act on a
// run whose resume has taken over. The harness's own children (an MCP
// relay on its stdio, tools) end with it or see their pipes close.
//
// The signal follows the OS thread that forked the harness; the Go
// runtime ends a thread only when a goroutine locked to it exits, which
// this package never does.
func harnessSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

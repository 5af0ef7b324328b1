package procguard

import "syscall"

// Attr starts a child as the leader of its own process group, which the
// kernel SIGKILLs when the process that started it dies (Pdeathsig): no
// window between its start and its Group guard's. The signal follows the
// OS thread that forked the child; the Go runtime ends a thread only
// when a goroutine locked to it exits.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

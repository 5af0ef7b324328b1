//go:build !linux

package procguard

import "syscall"

// Attr starts a child as the leader of its own process group. Only
// Linux can signal it when its parent dies; elsewhere its Group guard
// alone ends it.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

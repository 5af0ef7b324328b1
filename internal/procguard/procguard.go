package procguard

import (
	"os"
	"os/exec"
	"syscall"
)

// Group starts the guard of process group pgid: a shell in that group
// that waits on a pipe whose write end only this process holds and,
// once it closes — this process exited, however it died — kills the
// group. A parent-death signal (Attr) reaches only the group's leader;
// the guard reaches what the leader started too (the codex launcher's
// native codex, a shell's commands). Killing the group ends the guard
// with it; release closes the pipe — killing the group if it still
// runs — and reaps the guard. Call release once the group's work is
// over. A guard that cannot start is an error: the group runs
// unguarded.
func Group(pgid int) (release func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	g := exec.Command("/bin/sh", "-c", "read -r _; kill -9 0")
	g.Stdin, g.Env = r, []string{}
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = g.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	return func() {
		w.Close()
		g.Wait()
	}, nil
}

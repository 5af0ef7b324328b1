package localproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentrt/agentrt/contract"
)

// ErrLaunch is wrapped by refusals of a launch before anything started:
// an executable or working directory that does not resolve inside the
// environment root, or an environment variable name that cannot be
// passed. Messages name variables, never their values.
var ErrLaunch = errors.New("localproc: launch refused")

// recoveryPoll is how often a recovered process (one this instance did
// not start) and a following output stream look for news.
const recoveryPoll = 20 * time.Millisecond

// manager is an environment's contract.ExactProcessManager.
type manager struct{ e *environment }

// process is one exact process: state directory procs/<pid>/ holding
// start.json, stdout, stderr and, once it ended, term.json.
type process struct {
	e     *environment
	rec   procRecord
	dir   string
	local bool        // started (and reaped) by this instance
	os    *os.Process // local only

	mu     sync.Mutex
	reason string // termination kind the provider caused: timeout, signal, cancelled
	term   *contract.ProcessTermination
	done   chan struct{}
	timer  *time.Timer
}

// List implements contract.ExactProcessManager, by pid.
func (m manager) List(ctx context.Context) ([]contract.ExactProcessStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := m.e.live(); err != nil {
		return nil, err
	}
	procs, err := m.e.allProcs()
	if err != nil {
		return nil, err
	}
	out := make([]contract.ExactProcessStatus, 0, len(procs))
	for _, pr := range procs {
		out = append(out, *pr.status())
	}
	return out, nil
}

// Get implements contract.ExactProcessManager: this instance's handle, or
// one recovered from the process's state directory.
func (m manager) Get(ctx context.Context, pid int64) (contract.ExactProcess, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := m.e.live(); err != nil {
		return nil, err
	}
	pr, err := m.e.proc(pid)
	if err != nil || pr == nil {
		return nil, err
	}
	return pr, nil
}

// allProcs returns every process with a start record, by pid.
func (e *environment) allProcs() ([]*process, error) {
	entries, err := os.ReadDir(e.procsDir())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("localproc: %w", err)
	}
	var pids []int64
	for _, d := range entries {
		if n, err := strconv.ParseInt(d.Name(), 10, 64); err == nil && n > 0 && strconv.FormatInt(n, 10) == d.Name() {
			pids = append(pids, n)
		}
	}
	slices.Sort(pids)
	var out []*process
	for _, pid := range pids {
		pr, err := e.proc(pid)
		if err != nil {
			return nil, err
		}
		if pr != nil {
			out = append(out, pr)
		}
	}
	return out, nil
}

// proc returns process pid: the held handle, or one recovered from disk;
// nil when no process with the pid has started.
func (e *environment) proc(pid int64) (*process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if pr := e.procs[pid]; pr != nil {
		return pr, nil
	}
	if pid <= 0 {
		return nil, nil
	}
	dir := filepath.Join(e.procsDir(), strconv.FormatInt(pid, 10))
	data, err := os.ReadFile(filepath.Join(dir, "start.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("localproc: process %d: %w", pid, err)
	}
	rec, err := decodeProcRecord(data)
	if err != nil {
		return nil, fmt.Errorf("localproc: process %d: %w", pid, err)
	}
	if rec.PID != pid {
		return nil, fmt.Errorf("%w: process directory %d holds the record of %d", ErrRecord, pid, rec.PID)
	}
	pr := &process{e: e, rec: *rec, dir: dir, done: make(chan struct{})}
	t, err := pr.readTerm()
	if err != nil {
		return nil, err
	}
	if t != nil {
		pr.term = t
		close(pr.done)
	} else {
		go pr.monitor()
	}
	e.procs[pid] = pr
	return pr, nil
}

// readTerm reads term.json; nil when the process has no recorded end.
func (pr *process) readTerm() (*contract.ProcessTermination, error) {
	data, err := os.ReadFile(filepath.Join(pr.dir, "term.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("localproc: process %d: %w", pr.rec.PID, err)
	}
	t, err := decodeTermRecord(data)
	if err != nil {
		return nil, fmt.Errorf("localproc: process %d: %w", pr.rec.PID, err)
	}
	return t, nil
}

// finish records t as the termination unless one is recorded already
// (the first writer wins, across instances) and settles the handle with
// the recorded one.
func (pr *process) finish(t *contract.ProcessTermination) {
	data, err := encodeRecord(t)
	if err == nil {
		_, err = writeFileFirst(filepath.Join(pr.dir, "term.json"), data)
	}
	recorded, rerr := pr.readTerm()
	if err != nil || rerr != nil || recorded == nil {
		// The state directory is gone (destroyed) or unwritable: the
		// handle still settles with what was observed.
		recorded = t
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.term != nil {
		return
	}
	pr.term = recorded
	if pr.timer != nil {
		pr.timer.Stop()
	}
	close(pr.done)
}

// byReason is the termination the provider caused.
func (pr *process) byReason(reason string) *contract.ProcessTermination {
	switch reason {
	case contract.TerminationTimeout:
		return &contract.ProcessTermination{Kind: contract.TerminationTimeout, TimeoutMs: ptr(pr.rec.TimeoutMs)}
	case contract.TerminationSignal:
		return &contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr("SIGKILL")}
	}
	return &contract.ProcessTermination{Kind: contract.TerminationCancelled}
}

// reap waits for a local process and records how it ended. A SIGKILL the
// provider sent for a timeout, a kill or a cancellation is reported as
// that; any other end as the kernel reports it.
func (pr *process) reap() {
	state, err := pr.os.Wait()
	pr.mu.Lock()
	reason := pr.reason
	pr.mu.Unlock()
	var t *contract.ProcessTermination
	switch ws, ok := waitStatus(state); {
	case err != nil || !ok:
		t = pr.byReason(contract.TerminationCancelled)
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && reason != "":
		t = pr.byReason(reason)
	case ws.Exited():
		t = &contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: ptr(int64(ws.ExitStatus()))}
	case ws.Signaled():
		t = &contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr(unix.SignalName(ws.Signal()))}
	default:
		t = pr.byReason(contract.TerminationCancelled)
	}
	pr.finish(t)
}

func waitStatus(state *os.ProcessState) (syscall.WaitStatus, bool) {
	if state == nil {
		return 0, false
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	return ws, ok
}

// monitor follows a recovered process this instance did not start: its
// termination is recorded by the instance that reaps it, or, when that
// instance is gone and the process ended unobserved, recorded here —
// as the kill or timeout this instance caused, else as cancelled, since
// its exit status can no longer be known. It also enforces the timeout.
func (pr *process) monitor() {
	tick := time.NewTicker(recoveryPoll)
	defer tick.Stop()
	for range tick.C {
		if t, err := pr.readTerm(); err == nil && t != nil {
			pr.finish(t)
			return
		}
		select {
		case <-pr.done:
			return
		default:
		}
		if !pr.alive() {
			// The reaper may have recorded in between.
			if t, err := pr.readTerm(); err == nil && t != nil {
				pr.finish(t)
				return
			}
			pr.mu.Lock()
			reason := pr.reason
			pr.mu.Unlock()
			pr.finish(pr.byReason(reason))
			return
		}
		if pr.rec.TimeoutMs > 0 && time.Now().UnixMilli() >= pr.rec.StartedMs+pr.rec.TimeoutMs {
			pr.killTree(contract.TerminationTimeout)
		}
	}
}

// alive reports whether the host process of a recovered handle is still
// the one started (same start time), zombie included.
func (pr *process) alive() bool {
	ticks, err := startTicks(int(pr.rec.HostPID))
	return err == nil && ticks == pr.rec.StartTicks
}

// startTicks is the start time of host process pid, in clock ticks after
// boot (/proc/<pid>/stat field 22).
func startTicks(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("localproc: malformed /proc stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return 0, errors.New("localproc: malformed /proc stat")
	}
	return strconv.ParseInt(fields[19], 10, 64)
}

// killTree force-stops the process and every process it started, for
// reason (the termination kind reported when the kill is what ended it):
// the process is the first process of its own pid namespace, so the
// kernel kills all of them when it dies; its process group is killed too.
// A process that already ended is left alone.
func (pr *process) killTree(reason string) {
	pr.mu.Lock()
	if pr.term != nil {
		pr.mu.Unlock()
		return
	}
	if pr.reason == "" {
		pr.reason = reason
	}
	pr.mu.Unlock()
	pid := int(pr.rec.HostPID)
	if pr.local {
		syscall.Kill(-pid, syscall.SIGKILL)
		pr.os.Signal(syscall.SIGKILL)
		return
	}
	if pr.alive() {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// awaitDone waits until the process's termination is recorded or ctx
// ends. A termination already recorded is nil whatever ctx is (the
// select below could take ctx's end instead), so Wait and Kill of an
// ended process answer alike under any context.
func (pr *process) awaitDone(ctx context.Context) error {
	select {
	case <-pr.done:
		return nil
	default:
	}
	select {
	case <-pr.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PID implements contract.ExactProcess: the process's number within its
// environment (1, 2, … in spawn order), not the host pid.
func (pr *process) PID() int64 { return pr.rec.PID }

func (pr *process) status() *contract.ExactProcessStatus {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	s := &contract.ExactProcessStatus{PID: pr.rec.PID, Running: pr.term == nil, ExitCode: -1}
	if t := pr.term; t != nil {
		s.Termination = copyTerm(t)
		if t.Kind == contract.TerminationExit && t.ExitCode != nil {
			s.ExitCode = *t.ExitCode
		}
		if t.Kind == contract.TerminationSignal && t.Signal != nil {
			s.ExitSignal = ptr(*t.Signal)
		}
	}
	return s
}

func copyTerm(t *contract.ProcessTermination) *contract.ProcessTermination {
	c := *t
	if t.ExitCode != nil {
		c.ExitCode = ptr(*t.ExitCode)
	}
	if t.TimeoutMs != nil {
		c.TimeoutMs = ptr(*t.TimeoutMs)
	}
	if t.Signal != nil {
		c.Signal = ptr(*t.Signal)
	}
	return &c
}

// Status implements contract.ExactProcess.
func (pr *process) Status(ctx context.Context) (*contract.ExactProcessStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return pr.status(), nil
}

// Wait implements contract.ExactProcess.
func (pr *process) Wait(ctx context.Context) (*contract.ProcessTermination, error) {
	if err := pr.awaitDone(ctx); err != nil {
		return nil, err
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return copyTerm(pr.term), nil
}

// Kill implements contract.ExactProcess: it kills the whole tree and
// waits (bounded by ctx) until the termination, signal SIGKILL, is
// recorded. A process that already ended is left alone.
func (pr *process) Kill(ctx context.Context) error {
	pr.killTree(contract.TerminationSignal)
	return pr.awaitDone(ctx)
}

// Stdout implements contract.ExactProcess: the bytes of the process's
// stdout file, from the start, following it until the process ended.
func (pr *process) Stdout(ctx context.Context) iter.Seq2[[]byte, error] {
	return pr.stream(ctx, "stdout")
}

// Stderr implements contract.ExactProcess.
func (pr *process) Stderr(ctx context.Context) iter.Seq2[[]byte, error] {
	return pr.stream(ctx, "stderr")
}

func (pr *process) stream(ctx context.Context, name string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		f, err := os.Open(filepath.Join(pr.dir, name))
		if err != nil {
			yield(nil, fmt.Errorf("localproc: process %d %s: %w", pr.rec.PID, name, err))
			return
		}
		defer f.Close()
		buf := make([]byte, 32<<10)
		ended := false
		var poll *time.Timer
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			n, err := f.Read(buf)
			if n > 0 {
				if !yield(bytes.Clone(buf[:n]), nil) {
					return
				}
				continue
			}
			if err != nil && err != io.EOF {
				yield(nil, fmt.Errorf("localproc: process %d %s: %w", pr.rec.PID, name, err))
				return
			}
			if ended {
				return
			}
			if poll == nil {
				poll = time.NewTimer(recoveryPoll)
				defer poll.Stop()
			} else {
				poll.Reset(recoveryPoll)
			}
			select {
			case <-pr.done:
				// Every writer is gone with the process's pid namespace:
				// what remains is read to its end.
				ended = true
			case <-poll.C:
			case <-ctx.Done():
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Spawn implements contract.ExactProcessManager.
//
// The process is started directly (no shell) as [Executable, Args...],
// with exactly launch.Env, confined to the environment root (chroot) as
// the sandbox user, in fresh network, pid, IPC and UTS namespaces, its
// own process group, and the environment's limits applied before it runs
// its first instruction (it is held at exec by ptrace while they are
// set): RLIMIT_DATA memoryMb, RLIMIT_FSIZE diskMb, RLIMIT_CPU cpu ×
// maxLifetimeMs, RLIMIT_CORE 0. stdout and stderr go straight to files in
// the process's state directory; Stdin, when present, is a file the
// process reads to its end.
func (m manager) Spawn(ctx context.Context, launch *contract.ExactProcessLaunch) (contract.ExactProcess, error) {
	e := m.e
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := contract.Validate(contract.KindExactProcessLaunch, contract.ExactProcessLaunchSchema, launch); err != nil {
		return nil, err
	}
	e.spawning.RLock()
	defer e.spawning.RUnlock()
	if err := e.live(); err != nil {
		return nil, err
	}
	exe, err := e.resolveLaunch(launch)
	if err != nil {
		return nil, err
	}
	envv, err := envList(launch.Env)
	if err != nil {
		return nil, err
	}
	pid, dir, err := e.claimPID()
	if err != nil {
		return nil, err
	}
	pr, err := e.start(pid, dir, exe, envv, launch)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if ctx.Err() != nil {
		pr.killTree(contract.TerminationCancelled)
		<-pr.done
		return nil, ctx.Err()
	}
	return pr, nil
}

// resolveLaunch checks the working directory and resolves the executable
// inside the environment root: an absolute path as it is, a bare name
// along launch.Env's PATH.
func (e *environment) resolveLaunch(launch *contract.ExactProcessLaunch) (string, error) {
	root, err := os.OpenRoot(e.rootDir())
	if err != nil {
		return "", fmt.Errorf("localproc: %w", err)
	}
	defer root.Close()
	cwd, err := relPath(launch.Cwd)
	if err != nil {
		return "", fmt.Errorf("%w: cwd: %w", ErrLaunch, err)
	}
	if info, err := root.Stat(cwd); err != nil || !info.IsDir() {
		return "", fmt.Errorf("%w: cwd %q is not a directory of the environment", ErrLaunch, launch.Cwd)
	}
	executable := func(p string) bool {
		rel, err := relPath(p)
		if err != nil {
			return false
		}
		info, err := root.Stat(rel)
		return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
	}
	exe := launch.Executable
	switch {
	case path.IsAbs(exe):
		if executable(exe) {
			return path.Clean(exe), nil
		}
		return "", fmt.Errorf("%w: executable %q is not an executable file of the environment", ErrLaunch, exe)
	case strings.Contains(exe, "/"):
		return "", fmt.Errorf("%w: executable %q is neither absolute nor a bare name", ErrLaunch, exe)
	}
	search, ok := launch.Env["PATH"]
	if !ok {
		return "", fmt.Errorf("%w: executable %q is not absolute and the launch's env has no PATH", ErrLaunch, exe)
	}
	for _, d := range strings.Split(search, ":") {
		if path.IsAbs(d) && executable(path.Join(d, exe)) {
			return path.Join(d, exe), nil
		}
	}
	return "", fmt.Errorf("%w: executable %q is not found along the launch's PATH", ErrLaunch, exe)
}

// envList is env as sorted NAME=value strings. A name that is empty or
// holds '=' or NUL, or a value holding NUL, cannot be passed; the refusal
// names the variable, never the value.
func envList(env map[string]string) ([]string, error) {
	// Never nil: os.StartProcess would give a nil Env the provider's own
	// environment.
	out := make([]string, 0, len(env))
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("%w: environment variable name %q", ErrLaunch, k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%w: the value of environment variable %q holds NUL", ErrLaunch, k)
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// claimPID reserves the next environment-local pid by creating its state
// directory (creation is the claim, across instances).
func (e *environment) claimPID() (int64, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nextPID == 0 {
		entries, _ := os.ReadDir(e.procsDir())
		for _, d := range entries {
			if n, err := strconv.ParseInt(d.Name(), 10, 64); err == nil && n > e.nextPID {
				e.nextPID = n
			}
		}
	}
	for range 1 << 16 {
		e.nextPID++
		dir := filepath.Join(e.procsDir(), strconv.FormatInt(e.nextPID, 10))
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return e.nextPID, dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return 0, "", fmt.Errorf("localproc: %w", err)
		}
	}
	return 0, "", errors.New("localproc: no free process number")
}

// limits are the rlimits of the environment's processes.
func (e *environment) limits() map[int]uint64 {
	r := e.rec.Input.Resources
	cpuSeconds := math.Ceil(r.CPU * float64(e.rec.Input.MaxLifetimeMs) / 1000)
	return map[int]uint64{
		unix.RLIMIT_DATA:  uint64(r.MemoryMB) << 20,
		unix.RLIMIT_FSIZE: uint64(r.DiskMB) << 20,
		unix.RLIMIT_CPU:   uint64(max(cpuSeconds, 1)),
		unix.RLIMIT_CORE:  0,
	}
}

// start launches the process held at exec, applies the limits, records
// the start, then lets it run.
func (e *environment) start(pid int64, dir, exe string, envv []string, launch *contract.ExactProcessLaunch) (*process, error) {
	stdin, err := os.Open(os.DevNull)
	if launch.Stdin != nil {
		name := filepath.Join(dir, "stdin")
		if err = os.WriteFile(name, []byte(*launch.Stdin), 0o600); err == nil {
			stdin, err = os.Open(name)
			os.Remove(name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("localproc: stdin: %w", err)
	}
	defer stdin.Close()
	var outs [2]*os.File
	for i, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
		defer f.Close()
		outs[i] = f
	}
	attr := &os.ProcAttr{
		Dir:   launch.Cwd,
		Env:   envv,
		Files: []*os.File{stdin, outs[0], outs[1]},
		Sys:   sysProcAttr(e.rootDir(), e.p.uid, e.p.gid),
	}
	// The tracer is the thread that started the process: it alone may
	// detach it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	proc, err := os.StartProcess(exe, append([]string{launch.Executable}, launch.Args...), attr)
	if err != nil {
		return nil, fmt.Errorf("localproc: start %s: %w", launch.Executable, err)
	}
	abort := func(err error) (*process, error) {
		proc.Kill()
		proc.Wait()
		return nil, err
	}
	if err := holdAtExec(proc, e.limits()); err != nil {
		return abort(fmt.Errorf("localproc: start %s: %w", launch.Executable, err))
	}
	ticks, err := startTicks(proc.Pid)
	if err != nil {
		return abort(fmt.Errorf("localproc: start time: %w", err))
	}
	rec := procRecord{V: recordVersion, PID: pid, HostPID: int64(proc.Pid), StartTicks: ticks,
		StartedMs: time.Now().UnixMilli(), TimeoutMs: launch.TimeoutMs}
	data, err := encodeRecord(&rec)
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, "start.json"), data)
	}
	if err != nil {
		return abort(err)
	}
	pr := &process{e: e, rec: rec, dir: dir, local: true, os: proc, done: make(chan struct{})}
	e.mu.Lock()
	e.procs[pid] = pr
	e.mu.Unlock()
	if err := syscall.PtraceDetach(proc.Pid); err != nil {
		proc.Kill()
		go pr.reap()
		return nil, fmt.Errorf("localproc: start %s: detach: %w", launch.Executable, err)
	}
	go pr.reap()
	if launch.TimeoutMs > 0 {
		pr.mu.Lock()
		if pr.term == nil {
			pr.timer = time.AfterFunc(time.Duration(launch.TimeoutMs)*time.Millisecond, func() { pr.killTree(contract.TerminationTimeout) })
		}
		pr.mu.Unlock()
	}
	return pr, nil
}

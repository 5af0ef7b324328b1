package scripted

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// Exact-process errors. Each is wrapped; each refusal happens before any
// effect.
var (
	// ErrUnscriptedLaunch: no process rule of the script matches the
	// launch. A scripted provider never invents a process.
	ErrUnscriptedLaunch = errors.New("scripted: no process rule matches the launch")
	// ErrNoSpace: a write would take the environment's files past its
	// diskMb.
	ErrNoSpace = errors.New("scripted: the exact environment's disk is full")
	// ErrExactPath: a file path is not an absolute, clean path of a file.
	ErrExactPath = errors.New("scripted: exact file paths are absolute and clean")
)

// exactEgress are the egress modes the scripted exact environments
// enforce. A scripted process reaches no network at all, so blocked is
// honest; strict is refused, because it promises the named domains are
// reachable and nothing is.
var exactEgress = []contract.EgressMode{contract.EgressBlocked}

// exactEnvState is one exact-process environment as the backend holds it.
type exactEnvState struct {
	b        *backend
	id       string
	image    string
	disk     int64 // bytes
	metadata map[string]canonjson.Value
	expiry   *time.Timer

	mu        sync.Mutex
	destroyed bool
	files     map[string]exactFile
	procs     map[int64]*procState
	pids      int64
}

type exactFile struct {
	data []byte
	mode uint32
}

// procState is one scripted process: its buffered output and, once it
// ended, its termination.
type procState struct {
	pid    int64
	rule   *ProcessRule
	launch *contract.ExactProcessLaunch
	stop   chan struct{} // closed when it is interrupted

	mu         sync.Mutex
	out        [2][][]byte // stdout, stderr chunks
	changed    chan struct{}
	done       chan struct{}
	term       *contract.ProcessTermination
	exitSignal *string
}

// exactFacet is a client's exact-process facet.
type exactFacet struct{ p *Provider }

// exactEnv is a client view of an exact environment.
type exactEnv struct {
	p  *Provider
	st *exactEnvState
}

// exactProcs is a client view of an environment's processes.
type exactProcs struct{ st *exactEnvState }

// exactProc is a client handle on one process.
type exactProc struct{ ps *procState }

var (
	_ contract.ExactProcessHost        = (*Provider)(nil)
	_ contract.ExactProcessProvider    = (*exactFacet)(nil)
	_ contract.ExactProcessEnvironment = (*exactEnv)(nil)
	_ contract.ExactProcessManager     = (*exactProcs)(nil)
	_ contract.ExactProcess            = (*exactProc)(nil)
)

// ExactProcess implements contract.ExactProcessHost. A provider whose
// script has processes offers exact-process environments with real
// state: keyed idempotent creates, metadata queries, an in-memory
// exact-byte file system with modes bounded by the requested disk, and
// deterministic scripted processes whose output is buffered and replays
// from the start for every handle, recovered ones included. Timeouts,
// kills and a launch cancelled after start end a process with distinct
// terminations. Environments enforce egress blocked only (nothing is
// reachable), accept only digest-pinned images and no provider options,
// and are destroyed once their maxLifetimeMs passes. A provider without
// processes offers nothing (nil) and declares nothing.
func (p *Provider) ExactProcess() contract.ExactProcessProvider {
	if len(p.b.script.Processes) == 0 {
		return nil
	}
	return &exactFacet{p: p}
}

// ExactCreates returns how many exact environments were provisioned.
func (p *Provider) ExactCreates() int64 { return p.b.exactCreates.Load() }

// checkExactCreate refuses, before any effect, an exact create the
// provider cannot honor exactly.
func checkExactCreate(in *contract.CreateExactProcessInput) error {
	if _, err := contract.Validate(contract.KindCreateExactProcessInput, contract.CreateExactProcessInputSchema, in); err != nil {
		return err
	}
	if !slices.Contains(exactEgress, in.Egress.Mode) {
		return fmt.Errorf("scripted: exact egress mode %q (only %v is enforced): %w", in.Egress.Mode, exactEgress, contract.ErrUnsupported)
	}
	if !isPinnedImage(in.Image) {
		return fmt.Errorf("scripted: image %q is not digest-pinned (name@sha256:<hex>), so its identity is not immutable: %w", in.Image, contract.ErrUnsupported)
	}
	if len(in.ProviderOptions) > 0 {
		return fmt.Errorf("scripted: exact environments take no provider options: %w", contract.ErrUnsupported)
	}
	return nil
}

// Create implements contract.ExactProcessProvider. The same key and input
// return the same environment; a changed input under the key fails with
// contract.ErrIdempotencyConflict; a key whose environment was destroyed
// fails with ErrDestroyed (it never names a second environment).
func (f *exactFacet) Create(ctx context.Context, in *contract.CreateExactProcessInput) (contract.ExactProcessEnvironment, error) {
	if in == nil {
		return nil, fmt.Errorf("scripted: %w: nil input", contract.ErrCreateInput)
	}
	if err := checkExactCreate(in); err != nil {
		return nil, err
	}
	b := f.p.b
	st, _, err := b.exactKeyed.Do(ctx, in, func(ctx context.Context, in *contract.CreateExactProcessInput) (*exactEnvState, error) {
		return b.provisionExact(in), nil
	})
	if err != nil {
		return nil, err
	}
	if st.isDestroyed() {
		return nil, fmt.Errorf("%w: %s, created under key %q", ErrDestroyed, st.id, in.IdempotencyKey)
	}
	return &exactEnv{p: f.p, st: st}, nil
}

// provisionExact makes a fresh exact environment: no files, no processes.
func (b *backend) provisionExact(in *contract.CreateExactProcessInput) *exactEnvState {
	b.mu.Lock()
	b.exactSeq++
	st := &exactEnvState{b: b, id: fmt.Sprintf("%s-exact-%d", b.name, b.exactSeq), image: in.Image,
		disk: in.Resources.DiskMB << 20, metadata: maps.Clone(in.Metadata),
		files: map[string]exactFile{}, procs: map[int64]*procState{}}
	b.exactEnvs[st.id] = st
	b.mu.Unlock()
	b.exactCreates.Add(1)
	st.expiry = time.AfterFunc(time.Duration(in.MaxLifetimeMs)*time.Millisecond, st.destroy)
	return st
}

// Get implements contract.ExactProcessProvider: a live exact environment,
// else nil (ordinary environments are not exact).
func (f *exactFacet) Get(ctx context.Context, id string) (contract.ExactProcessEnvironment, error) {
	b := f.p.b
	b.mu.Lock()
	st := b.exactEnvs[id]
	b.mu.Unlock()
	if st == nil || st.isDestroyed() {
		return nil, nil
	}
	return &exactEnv{p: f.p, st: st}, nil
}

// List implements contract.ExactProcessProvider: every live exact
// environment whose metadata the query matches exactly, by id.
func (f *exactFacet) List(ctx context.Context, q *contract.ExactProcessEnvironmentQuery) ([]contract.ExactProcessEnvironment, error) {
	if q != nil {
		if _, err := contract.Validate(contract.KindExactProcessEnvironmentQuery, contract.ExactProcessEnvironmentQuerySchema, q); err != nil {
			return nil, err
		}
		if len(q.ProviderOptions) > 0 {
			return nil, fmt.Errorf("scripted: exact queries take no provider options: %w", contract.ErrUnsupported)
		}
	}
	b := f.p.b
	b.mu.Lock()
	envs := slices.Collect(maps.Values(b.exactEnvs))
	b.mu.Unlock()
	slices.SortFunc(envs, func(x, y *exactEnvState) int { return strings.Compare(x.id, y.id) })
	var out []contract.ExactProcessEnvironment
	for _, st := range envs {
		if !st.isDestroyed() && contract.ExactProcessQueryMatches(q, st.metadata) {
			out = append(out, &exactEnv{p: f.p, st: st})
		}
	}
	return out, nil
}

func (st *exactEnvState) isDestroyed() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.destroyed
}

func (st *exactEnvState) gone() error { return fmt.Errorf("%w: %s", ErrDestroyed, st.id) }

// destroy ends the environment: its processes are cancelled and its files
// are gone.
func (st *exactEnvState) destroy() {
	st.mu.Lock()
	if st.destroyed {
		st.mu.Unlock()
		return
	}
	st.destroyed = true
	st.files = nil
	procs := slices.Collect(maps.Values(st.procs))
	st.mu.Unlock()
	if st.expiry != nil {
		st.expiry.Stop()
	}
	for _, ps := range procs {
		ps.interrupt(&contract.ProcessTermination{Kind: contract.TerminationCancelled}, "SIGKILL")
	}
}

// ID implements contract.ExactProcessEnvironment.
func (e *exactEnv) ID() string { return e.st.id }

// Provider implements contract.ExactProcessEnvironment.
func (e *exactEnv) Provider() string { return e.st.b.name }

// Metadata implements contract.ExactProcessEnvironment: a detached copy.
func (e *exactEnv) Metadata() map[string]canonjson.Value { return maps.Clone(e.st.metadata) }

// Processes implements contract.ExactProcessEnvironment.
func (e *exactEnv) Processes() contract.ExactProcessManager { return &exactProcs{st: e.st} }

// Destroy implements contract.ExactProcessEnvironment; destroying twice
// is harmless.
func (e *exactEnv) Destroy(ctx context.Context) error {
	e.st.destroy()
	return nil
}

// WriteFile implements contract.ExactProcessEnvironment: exactly data at
// absPath with mode, within the environment's diskMb. A path that is a
// directory of another file, or lies under a file, is refused.
func (e *exactEnv) WriteFile(ctx context.Context, absPath string, data []byte, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !isExactPath(absPath) {
		return fmt.Errorf("%w: %q", ErrExactPath, absPath)
	}
	posix, err := contract.PosixFileMode(mode)
	if err != nil {
		return fmt.Errorf("scripted: %w", err)
	}
	st := e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return st.gone()
	}
	used := int64(len(data))
	for p, f := range st.files {
		switch {
		case strings.HasPrefix(p, absPath+"/"):
			return &fs.PathError{Op: "write", Path: absPath, Err: errors.New("is a directory")}
		case strings.HasPrefix(absPath, p+"/"):
			return &fs.PathError{Op: "write", Path: absPath, Err: fmt.Errorf("%s is not a directory", p)}
		case p != absPath:
			used += int64(len(f.data))
		}
	}
	if used > st.disk {
		return fmt.Errorf("%w: writing %d bytes to %s would use %d of %d bytes", ErrNoSpace, len(data), absPath, used, st.disk)
	}
	st.files[absPath] = exactFile{data: slices.Clone(data), mode: posix}
	return nil
}

// ReadFile implements contract.ExactProcessEnvironment: the exact bytes,
// refused before any is copied when the file holds more than maxBytes.
func (e *exactEnv) ReadFile(ctx context.Context, p string, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("scripted: maxBytes %d is negative", maxBytes)
	}
	if !isExactPath(p) {
		return nil, fmt.Errorf("%w: %q", ErrExactPath, p)
	}
	st := e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return nil, st.gone()
	}
	f, ok := st.files[p]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	if n := int64(len(f.data)); n > maxBytes {
		return nil, &contract.FileTooLargeError{Path: p, Size: n, MaxBytes: maxBytes}
	}
	return append([]byte{}, f.data...), nil
}

// FileMode returns the POSIX mode of the exact file at p in the exact
// environment env (one this provider returned), for tests of WriteFile.
func FileMode(env contract.ExactProcessEnvironment, p string) (uint32, bool) {
	e, ok := env.(*exactEnv)
	if !ok {
		return 0, false
	}
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	f, ok := e.st.files[p]
	return f.mode, ok
}

// List implements contract.ExactProcessManager: every process the
// environment started, by pid.
func (m *exactProcs) List(ctx context.Context) ([]contract.ExactProcessStatus, error) {
	st := m.st
	st.mu.Lock()
	if st.destroyed {
		st.mu.Unlock()
		return nil, st.gone()
	}
	procs := slices.Collect(maps.Values(st.procs))
	st.mu.Unlock()
	slices.SortFunc(procs, func(a, b *procState) int { return cmp.Compare(a.pid, b.pid) })
	out := make([]contract.ExactProcessStatus, 0, len(procs))
	for _, ps := range procs {
		out = append(out, ps.status())
	}
	return out, nil
}

// Get implements contract.ExactProcessManager: a new handle on the
// process, which replays exactly as the first one.
func (m *exactProcs) Get(ctx context.Context, pid int64) (contract.ExactProcess, error) {
	st := m.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return nil, st.gone()
	}
	ps := st.procs[pid]
	if ps == nil {
		return nil, nil
	}
	return &exactProc{ps: ps}, nil
}

// Spawn implements contract.ExactProcessManager: the first process rule
// that matches the launch plays; a launch no rule matches is refused
// with ErrUnscriptedLaunch.
func (m *exactProcs) Spawn(ctx context.Context, launch *contract.ExactProcessLaunch) (contract.ExactProcess, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if launch == nil {
		return nil, errors.New("scripted: nil launch")
	}
	v, err := contract.Validate(contract.KindExactProcessLaunch, contract.ExactProcessLaunchSchema, launch)
	if err != nil {
		return nil, err
	}
	if !path.IsAbs(launch.Cwd) {
		return nil, fmt.Errorf("scripted: cwd %q is not absolute", launch.Cwd)
	}
	st := m.st
	rule, executable, err := st.b.processRule(st.image, launch)
	if err != nil {
		return nil, err
	}
	// The process keeps its own copy of the launch.
	own := new(contract.ExactProcessLaunch)
	if err := canonjson.FromValue(v, own); err != nil {
		return nil, err
	}
	own.Executable = executable
	st.mu.Lock()
	if st.destroyed {
		st.mu.Unlock()
		return nil, st.gone()
	}
	st.pids++
	ps := &procState{pid: st.pids, rule: rule, launch: own, stop: make(chan struct{}), done: make(chan struct{})}
	st.procs[ps.pid] = ps
	st.mu.Unlock()
	go ps.play()
	if err := ctx.Err(); err != nil {
		// The caller gave up after the process started: kill it, then
		// refuse (the reference's abort after dispatch).
		ps.interrupt(&contract.ProcessTermination{Kind: contract.TerminationCancelled}, "SIGKILL")
		return nil, fmt.Errorf("scripted: the launch was cancelled after process %d started, which was killed: %w", ps.pid, err)
	}
	return &exactProc{ps: ps}, nil
}

// processRule finds the rule a launch plays in an environment of image,
// with the absolute executable it runs: the launch's own, or a bare
// command resolved against the launch env's PATH.
func (b *backend) processRule(image string, l *contract.ExactProcessLaunch) (*ProcessRule, string, error) {
	candidates := []string{l.Executable}
	if !path.IsAbs(l.Executable) {
		pathVar, ok := l.Env["PATH"]
		if !ok || strings.Contains(l.Executable, "/") {
			return nil, "", fmt.Errorf("scripted: executable %q is neither absolute nor a command the launch's PATH resolves", l.Executable)
		}
		candidates = nil
		for _, dir := range strings.Split(pathVar, ":") {
			if path.IsAbs(dir) {
				candidates = append(candidates, path.Join(dir, l.Executable))
			}
		}
	}
	for _, exe := range candidates {
		for i := range b.script.Processes {
			r := &b.script.Processes[i]
			if r.Executable == exe && (r.Args == nil || slices.Equal(r.Args, l.Args)) && (r.Image == "" || r.Image == image) {
				return r, exe, nil
			}
		}
	}
	return nil, "", fmt.Errorf("%w: %q %q", ErrUnscriptedLaunch, l.Executable, l.Args)
}

// substitution matches the placeholders of a process's output.
var substitution = regexp.MustCompile(`\{\{(stdin|env:[^{}]*)\}\}`)

// expand fills the placeholders of a process's output from its launch.
func (ps *procState) expand(s string) string {
	return substitution.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-2]
		if name == "stdin" {
			if ps.launch.Stdin == nil {
				return ""
			}
			return *ps.launch.Stdin
		}
		return ps.launch.Env[strings.TrimPrefix(name, "env:")]
	})
}

// play runs the scripted process until its output played and it ended,
// or it was interrupted.
func (ps *procState) play() {
	if ms := ps.launch.TimeoutMs; ms > 0 {
		t := time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			ps.interrupt(&contract.ProcessTermination{Kind: contract.TerminationTimeout, TimeoutMs: ptr(ms)}, "SIGKILL")
		})
		defer t.Stop()
	}
	for _, step := range ps.rule.Output {
		switch {
		case step.Stdout != nil:
			ps.write(0, ps.expand(*step.Stdout))
		case step.Stderr != nil:
			ps.write(1, ps.expand(*step.Stderr))
		case step.DelayMS != nil:
			t := time.NewTimer(time.Duration(*step.DelayMS) * time.Millisecond)
			select {
			case <-t.C:
			case <-ps.stop:
				t.Stop()
				return
			}
		}
	}
	switch {
	case ps.rule.Hang:
		<-ps.stop
	case ps.rule.Signal != "":
		ps.end(&contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr(ps.rule.Signal)}, ps.rule.Signal)
	default:
		ps.end(&contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: ptr(ps.rule.ExitCode)}, "")
	}
}

// write buffers one output chunk unless the process already ended.
func (ps *procState) write(stream int, s string) {
	if s == "" {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.term != nil {
		return
	}
	ps.out[stream] = append(ps.out[stream], []byte(s))
	ps.wake()
}

// wake wakes the followers; the caller holds ps.mu.
func (ps *procState) wake() {
	if ps.changed != nil {
		close(ps.changed)
		ps.changed = nil
	}
}

// end records the termination, unless one was recorded; it reports
// whether this call ended the process.
func (ps *procState) end(t *contract.ProcessTermination, signal string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.term != nil {
		return false
	}
	ps.term = t
	if signal != "" {
		ps.exitSignal = ptr(signal)
	}
	close(ps.done)
	ps.wake()
	return true
}

// interrupt ends a running process with t and stops its play; a process
// that already ended keeps its termination.
func (ps *procState) interrupt(t *contract.ProcessTermination, signal string) {
	if ps.end(t, signal) {
		close(ps.stop)
	}
}

// status is the process's status, agreeing with its termination.
func (ps *procState) status() contract.ExactProcessStatus {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s := contract.ExactProcessStatus{PID: ps.pid, Running: ps.term == nil, ExitCode: -1}
	if ps.term != nil {
		t := *ps.term
		s.Termination = &t
		if t.Kind == contract.TerminationExit {
			s.ExitCode = *t.ExitCode
		}
		if ps.exitSignal != nil {
			s.ExitSignal = ptr(*ps.exitSignal)
		}
	}
	return s
}

// PID implements contract.ExactProcess.
func (x *exactProc) PID() int64 { return x.ps.pid }

// Status implements contract.ExactProcess.
func (x *exactProc) Status(ctx context.Context) (*contract.ExactProcessStatus, error) {
	s := x.ps.status()
	return &s, nil
}

// Wait implements contract.ExactProcess. An ended process's termination
// is its answer whatever ctx is: ctx ends only a wait still under way.
func (x *exactProc) Wait(ctx context.Context) (*contract.ProcessTermination, error) {
	select {
	case <-x.ps.done:
	default:
		select {
		case <-x.ps.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	x.ps.mu.Lock()
	defer x.ps.mu.Unlock()
	t := *x.ps.term
	return &t, nil
}

// Kill implements contract.ExactProcess: a running process ends with
// signal SIGKILL; an ended one keeps its termination.
func (x *exactProc) Kill(ctx context.Context) error {
	x.ps.interrupt(&contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr("SIGKILL")}, "SIGKILL")
	return nil
}

// Stdout implements contract.ExactProcess.
func (x *exactProc) Stdout(ctx context.Context) iter.Seq2[[]byte, error] { return x.ps.follow(ctx, 0) }

// Stderr implements contract.ExactProcess.
func (x *exactProc) Stderr(ctx context.Context) iter.Seq2[[]byte, error] { return x.ps.follow(ctx, 1) }

// follow replays one output stream from the start and follows it until
// the process ended; every chunk is a copy.
func (ps *procState) follow(ctx context.Context, stream int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		next := 0
		for {
			ps.mu.Lock()
			chunks := ps.out[stream][next:]
			ended := ps.term != nil
			if len(chunks) == 0 && !ended && ps.changed == nil {
				ps.changed = make(chan struct{})
			}
			changed := ps.changed
			ps.mu.Unlock()
			for _, c := range chunks {
				if !yield(slices.Clone(c), nil) {
					return
				}
			}
			next += len(chunks)
			if len(chunks) > 0 {
				continue
			}
			if ended {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
}

package localproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentrt/agentrt/contract"
)

// DefaultName is the provider name when Options.Name is empty.
const DefaultName = "localproc"

// DefaultSandboxID is the user and group id exact processes run as when
// Options leave them zero ("nobody" on most systems). Root is never used.
const DefaultSandboxID = 65534

// staleStage is the age after which a staging directory is a leftover of
// an interrupted create.
const staleStage = 10 * time.Minute

// Options configure New.
type Options struct {
	// Name is the provider's name; "" means DefaultName.
	Name string
	// Dir is the state root: environments, their files, process output
	// and terminations live below it, so a new Provider over the same Dir
	// recovers them. Required; created (mode 0700) when missing.
	Dir string
	// Images are the local image directories the provider accepts. Each
	// is addressed by its ImageRef ("local@sha256:<manifest digest>"),
	// computed when New runs; an environment's root is a verified copy.
	Images []string
	// SandboxUID and SandboxGID are the ids exact processes run as; zero
	// means DefaultSandboxID.
	SandboxUID, SandboxGID uint32
}

// Provider runs exact processes on this machine. It implements
// contract.Provider and contract.ExactProcessHost; its methods are safe
// for concurrent use.
type Provider struct {
	opts        Options
	name        string
	dir         string
	envsDir     string
	images      map[string]string // image reference → directory
	uid, gid    int
	unavailable error // why exactProcess is not offered; nil when it is
	facet       *exactFacet

	keyed contract.KeyedExactProcessCreate[*environment]

	mu   sync.Mutex
	envs map[string]*environment // live environments this instance holds
}

// New returns a provider over opts.Dir. It registers opts.Images and
// probes whether this machine can enforce every exact-process guarantee
// (running as root, so processes can be confined to their environment's
// root and run as the sandbox user, and a fresh network and process
// namespace can be created); when it cannot, the provider declares and
// offers no exactProcess and ExactProcessUnavailable says why. Expired
// environments found in Dir are destroyed.
func New(opts Options) (*Provider, error) {
	if opts.Dir == "" {
		return nil, errors.New("localproc: Options.Dir is required")
	}
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	uid, gid := int(opts.SandboxUID), int(opts.SandboxGID)
	if uid == 0 {
		uid = DefaultSandboxID
	}
	if gid == 0 {
		gid = DefaultSandboxID
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("localproc: %w", err)
	}
	opts.Images = slices.Clone(opts.Images)
	p := &Provider{opts: opts, name: name, dir: dir, envsDir: filepath.Join(dir, "envs"), images: map[string]string{},
		uid: uid, gid: gid, envs: map[string]*environment{}}
	for _, d := range []string{dir, p.envsDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
	}
	for _, img := range opts.Images {
		ref, err := ImageRef(img)
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(img)
		if err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
		p.images[ref] = abs
	}
	p.unavailable = probe(uid, gid)
	if p.unavailable == nil {
		p.facet = &exactFacet{p: p}
	}
	p.sweep()
	return p, nil
}

// namespaces are the fresh namespaces of every exact process: user (its
// ids map to the sandbox ids only), network (egress blocked), pid (the
// process tree dies with its first process), IPC and UTS.
const namespaces = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// probe reports why this machine cannot enforce the exact-process
// guarantees, or nil when it can. It walks the real launch path: a
// process in the fresh namespaces, as the sandbox user, held at exec so
// its limits can be set, then killed before it runs an instruction.
func probe(uid, gid int) error {
	if os.Geteuid() != 0 {
		return errors.New("localproc: not running as root: processes cannot be confined to their environment root")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("localproc: probe: %w", err)
	}
	defer null.Close()
	attr := &os.ProcAttr{Files: []*os.File{null, null, null}, Env: []string{}, Sys: sysProcAttr("", uid, gid)}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// /proc/self/exe is reached without searching its directories, so the
	// sandbox user can exec it wherever this binary lives.
	proc, err := os.StartProcess("/proc/self/exe", []string{"localproc-probe"}, attr)
	if err != nil {
		return fmt.Errorf("localproc: cannot start a process in fresh user, network and pid namespaces: %w", err)
	}
	defer func() {
		proc.Kill()
		proc.Wait()
	}()
	if err := holdAtExec(proc, map[int]uint64{unix.RLIMIT_CORE: 0}); err != nil {
		return fmt.Errorf("localproc: cannot hold a process at exec and set its limits: %w", err)
	}
	return nil
}

// sysProcAttr is the confinement of an exact process: chrooted into root
// (none when empty), the sandbox ids, its own process group, the fresh
// namespaces, held at exec (ptrace) until its limits are set.
func sysProcAttr(root string, uid, gid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
		Setpgid:    true,
		Cloneflags: namespaces,
		// The sandbox ids map to themselves in the process's own user
		// namespace, which this provider owns: it may set the process's
		// limits, and the process holds no capability.
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: true,
		Ptrace:                     true,
	}
}

// holdAtExec waits until proc, started with ptrace on this locked
// thread, stopped at its exec, sets its limits, and leaves it stopped.
func holdAtExec(proc *os.Process, limits map[int]uint64) error {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(proc.Pid, &ws, syscall.WALL, nil); err != nil {
		return err
	}
	if !ws.Stopped() {
		return errors.New("the process did not stop at exec")
	}
	// Should this process die before the process is released, the kernel
	// kills the process: none runs without its limits and record.
	if err := unix.PtraceSetOptions(proc.Pid, unix.PTRACE_O_EXITKILL); err != nil {
		return fmt.Errorf("ptrace options: %w", err)
	}
	for res, v := range limits {
		if err := unix.Prlimit(proc.Pid, res, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
			return fmt.Errorf("limit %d: %w", res, err)
		}
	}
	return nil
}

// sweep removes leftovers of interrupted creates and destroys, and
// destroys expired environments.
func (p *Provider) sweep() {
	entries, err := os.ReadDir(p.envsDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !envIDPattern.MatchString(e.Name()) {
			// A staging directory may belong to a create still running in
			// another instance: only an old one is a leftover.
			if info, err := e.Info(); err == nil && (!strings.HasPrefix(e.Name(), ".stage-") || time.Since(info.ModTime()) > staleStage) {
				os.RemoveAll(filepath.Join(p.envsDir, e.Name()))
			}
			continue
		}
		if env, err := p.load(e.Name()); err == nil && env != nil {
			env.armExpiry()
		}
	}
}

// Name implements contract.Provider.
func (p *Provider) Name() string { return p.name }

// Options returns the options the provider was made with: New(p.Options())
// is the same provider after a restart.
func (p *Provider) Options() Options {
	o := p.opts
	o.Images = slices.Clone(o.Images)
	return o
}

// Close releases the instance: it stops the lifetime timers of the
// environments it holds. Processes keep running and their output keeps
// being written; a later Provider over Dir recovers them, and destroys
// environments whose lifetime ended meanwhile. Close is idempotent.
func (p *Provider) Close() error {
	p.mu.Lock()
	envs := make([]*environment, 0, len(p.envs))
	for _, e := range p.envs {
		envs = append(envs, e)
	}
	p.mu.Unlock()
	for _, e := range envs {
		e.stopExpiry()
	}
	return nil
}

// ExactProcessUnavailable is nil when the provider offers exact
// processes, else why it does not.
func (p *Provider) ExactProcessUnavailable() error { return p.unavailable }

// ImageRefs returns the references of the registered images, sorted.
func (p *Provider) ImageRefs() []string {
	refs := make([]string, 0, len(p.images))
	for r := range p.images {
		refs = append(refs, r)
	}
	slices.Sort(refs)
	return refs
}

// Capabilities implements contract.Provider. The document declares only
// exactProcess, with egress mode blocked (the only mode enforced), and
// only when the probe in New passed; every agent ability is absent.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &contract.Capabilities{}
	if p.facet != nil {
		c.ExactProcess = &contract.ExactProcessCapabilities{Egress: []contract.EgressMode{contract.EgressBlocked}}
	}
	return c, nil
}

// Create implements contract.Provider: localproc holds no agents, so
// every agent environment create is refused with contract.ErrUnsupported
// before any effect. Exact environments are created through
// ExactProcess().Create.
func (p *Provider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	return nil, fmt.Errorf("%w: localproc creates no agent environments; it offers exact processes only", contract.ErrUnsupported)
}

// ExactProcess implements contract.ExactProcessHost: the facet, or an
// untyped nil when the machine cannot enforce the guarantees.
func (p *Provider) ExactProcess() contract.ExactProcessProvider {
	if p.facet == nil {
		return nil
	}
	return p.facet
}

// envDir is the state directory of environment id.
func (p *Provider) envDir(id string) string { return filepath.Join(p.envsDir, id) }

// load returns environment id: the instance's own handle when it holds
// one and the environment still exists on disk, else a handle recovered
// from disk; (nil, nil) when no live environment has the id. An expired
// environment is destroyed and reported absent.
func (p *Provider) load(id string) (*environment, error) {
	if !envIDPattern.MatchString(id) {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(p.envDir(id), "env.json"))
	if errors.Is(err, os.ErrNotExist) {
		p.mu.Lock()
		if env := p.envs[id]; env != nil {
			env.markGone()
			delete(p.envs, id)
		}
		p.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("localproc: environment %s: %w", id, err)
	}
	p.mu.Lock()
	env := p.envs[id]
	if env == nil {
		rec, err := decodeEnvRecord(data)
		if err != nil {
			p.mu.Unlock()
			return nil, fmt.Errorf("localproc: environment %s: %w", id, err)
		}
		if rec.ID != id {
			p.mu.Unlock()
			return nil, fmt.Errorf("%w: environment directory %s holds the record of %s", ErrRecord, id, rec.ID)
		}
		env = newEnvironment(p, rec)
		p.envs[id] = env
	}
	p.mu.Unlock()
	if env.expired(time.Now()) {
		env.Destroy(context.Background())
		return nil, nil
	}
	return env, nil
}

// liveIDs lists the ids of the environments on disk.
func (p *Provider) liveIDs() ([]string, error) {
	entries, err := os.ReadDir(p.envsDir)
	if err != nil {
		return nil, fmt.Errorf("localproc: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if envIDPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// forget drops env from the instance and its key from the keyed
// admission.
func (p *Provider) forget(env *environment) {
	p.mu.Lock()
	if p.envs[env.rec.ID] == env {
		delete(p.envs, env.rec.ID)
	}
	p.mu.Unlock()
	p.keyed.Forget(env.rec.Input.IdempotencyKey)
}

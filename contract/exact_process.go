package contract

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"reflect"

	"github.com/agentrt/agentrt/canonjson"
)

// The exact-process ability (capability exactProcess; spec J, seed 000,
// checklist EXP-01..EXP-13): isolated, reproducible process execution,
// separate from agent-backed Create. It never starts a provider-managed
// agent and holds no candidate types — higher-level runtimes build their
// measured candidates on it (EXP-02, EXP-12).
//
// A provider offers it through ExactProcessHost and declares it in
// Capabilities.ExactProcess, and does either only when every guarantee
// below is enforced on its real execution path (EXP-13): a fresh
// environment, immutable image identity, explicit resources, bounded
// exact-byte file reads, shell-free argv, a replacement process
// environment, recoverable output and terminal reason, bounded network
// egress and collision-safe idempotent recovery. CheckProviderExposure
// fails a provider whose declaration and offer disagree.

// ExactProcessHost is the optional provider ability that offers exact
// processes (TypeScript provider.exactProcess). It is offered exactly when
// the provider's document declares exactProcess: CheckProviderExposure
// and providertest's capability-exposure fail a disagreement in either
// direction.
type ExactProcessHost interface {
	// ExactProcess returns the exact-process facet. A provider type that
	// offers it only in some configurations returns an untyped nil in the
	// others (spec N: facet non-nil ⇔ flag) and then must not declare
	// exactProcess.
	ExactProcess() ExactProcessProvider
}

// ExactProcessProvider creates, recovers and lists exact-process
// environments.
type ExactProcessProvider interface {
	// Create provisions a fresh environment (no provider-managed agent or
	// user workload, no customer ingress, no process running) from the
	// immutable image, with exactly the requested resources (never
	// provider defaults) and egress policy (EXP-03..EXP-05, EXP-10). The
	// idempotency key makes it one retry-safe operation (EXP-11): the same
	// key with the same CreateExactProcessInputDigest returns the same
	// environment, and the same key with any other input fails with
	// ErrIdempotencyConflict before any second effect. An egress mode the
	// provider does not enforce fails with ErrUnsupported — never weakened
	// or widened — and so do provider options that would weaken isolation.
	// ctx bounds this call (the reference's signal) and is no part of the
	// input's identity.
	Create(ctx context.Context, in *CreateExactProcessInput) (ExactProcessEnvironment, error)
	// Get recovers an exact environment by id, for example after a
	// restart; (nil, nil) when no live exact environment has the id — an
	// unknown, destroyed or ordinary (agent) environment.
	Get(ctx context.Context, id string) (ExactProcessEnvironment, error)
	// List returns every live exact environment the query selects: each
	// member of q.Metadata must equal the persisted metadata member of the
	// same name exactly (ExactProcessQueryMatches). A nil query or one
	// without metadata selects every environment. The provider owns
	// pagination: the result is complete.
	List(ctx context.Context, q *ExactProcessEnvironmentQuery) ([]ExactProcessEnvironment, error)
}

// ExactProcessEnvironment is one exact-process environment. Once
// destroyed, every operation but Destroy fails.
type ExactProcessEnvironment interface {
	// ID is the environment's id, unique within its provider.
	ID() string
	// Provider is the name of the provider that holds it.
	Provider() string
	// Metadata is a detached copy of the metadata it was created with.
	Metadata() map[string]canonjson.Value
	// Processes is the environment's process manager.
	Processes() ExactProcessManager
	// WriteFile writes exactly data to the absolute path absPath with the
	// file mode (permission bits, optionally fs.ModeSetuid, ModeSetgid
	// and ModeSticky: POSIX 0..0o7777; see PosixFileMode), replacing any
	// file there. ctx is checked before and after the write is
	// dispatched; once dispatched, a write is not cancelled.
	WriteFile(ctx context.Context, absPath string, data []byte, mode fs.FileMode) error
	// ReadFile returns the exact bytes of the file at path (EXP-06). A
	// file larger than maxBytes is refused with a *FileTooLargeError
	// (errors.Is ErrFileTooLarge) before its content is loaded, and so is
	// one that grew past maxBytes after the size check; a missing file is
	// an error matching fs.ErrNotExist. A read has no side effect.
	ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error)
	// Destroy stops every process of the environment (force-stopping
	// process trees) and releases it; afterwards the provider's Get
	// answers nil and List omits it.
	Destroy(ctx context.Context) error
}

// ExactProcessManager launches and recovers the processes of one exact
// environment.
type ExactProcessManager interface {
	// List returns the status of every process the environment started,
	// running or terminated; a fresh environment has none.
	List(ctx context.Context) ([]ExactProcessStatus, error)
	// Get recovers a process by pid; (nil, nil) when the environment has
	// no such process. A recovered handle replays output and reports the
	// terminal reason exactly as the handle Spawn returned (EXP-09).
	Get(ctx context.Context, pid int64) (ExactProcess, error)
	// Spawn starts one shell-free process (EXP-07): the executable runs
	// with exactly launch.Args (no shell interprets them) in launch.Cwd,
	// with launch.Env as its whole environment — the ambient and provider
	// environments are not inherited, so no secret reaches it but what
	// the caller put there (EXP-08; runtime-process-control names are the
	// caller's to use here, ENP-04); Stdin, when present, is written and
	// closed; TimeoutMs > 0 ends it with a timeout termination. ctx bounds
	// the launch only, never the process's life: it is checked before
	// dispatch, and when it is done after the process started, the
	// process tree is killed (termination cancelled) and Spawn fails.
	Spawn(ctx context.Context, launch *ExactProcessLaunch) (ExactProcess, error)
}

// ExactProcess is a handle on one process of an exact environment.
type ExactProcess interface {
	// PID is the process id, unique within its environment.
	PID() int64
	// Status is the process's current status. Once it terminated, Running
	// is false and Termination is present and equal to Wait's answer
	// (SameProcessTermination).
	Status(ctx context.Context) (*ExactProcessStatus, error)
	// Wait blocks until the process terminated and returns how: exit with
	// its code, or a timeout, a signal or a cancellation, each distinct
	// from an exit. ctx ends the wait, not the process.
	Wait(ctx context.Context) (*ProcessTermination, error)
	// Kill force-stops the whole process tree (termination signal
	// SIGKILL). Killing a process that already terminated does nothing
	// and succeeds.
	Kill(ctx context.Context) error
	// Stdout yields the process's standard output as raw bytes: every
	// buffered chunk from the start, then new chunks as they arrive,
	// ending after the process terminated and all output was yielded.
	// Every iteration replays from the start, and so does a recovered
	// handle's, identically. Chunk boundaries carry no meaning, and each
	// chunk is the caller's. ctx ends the iteration with ctx.Err().
	Stdout(ctx context.Context) iter.Seq2[[]byte, error]
	// Stderr is Stdout for the standard error stream.
	Stderr(ctx context.Context) iter.Seq2[[]byte, error]
}

// ErrFileTooLarge is matched (errors.Is) by a bounded exact read refused
// because the file holds more than the caller's maxBytes.
var ErrFileTooLarge = errors.New("file is larger than the read allows")

// FileTooLargeError is the refusal of a bounded exact read: the file at
// Path holds Size bytes (at least; -1 when unknown), more than MaxBytes.
// Nothing of its content was returned.
type FileTooLargeError struct {
	Path     string
	Size     int64
	MaxBytes int64
}

func (e *FileTooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s is larger than the %d bytes the read allows", e.Path, e.MaxBytes)
	}
	return fmt.Sprintf("%s holds %d bytes, more than the %d the read allows", e.Path, e.Size, e.MaxBytes)
}

// Is makes a FileTooLargeError match ErrFileTooLarge.
func (e *FileTooLargeError) Is(target error) bool { return target == ErrFileTooLarge }

// ErrFileMode is wrapped by PosixFileMode's refusals.
var ErrFileMode = errors.New("exact file mode must be 0..0o7777")

// PosixFileMode converts an exact file mode to its POSIX form 0..0o7777:
// the permission bits, plus 0o4000, 0o2000 and 0o1000 for fs.ModeSetuid,
// fs.ModeSetgid and fs.ModeSticky. Any other bit (a file type, or a
// permission written as a raw 0o4000) is refused with ErrFileMode, before
// any write.
func PosixFileMode(mode fs.FileMode) (uint32, error) {
	if mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		return 0, fmt.Errorf("%w: %v (%#o)", ErrFileMode, mode, uint32(mode))
	}
	posix := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		posix |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		posix |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		posix |= 0o1000
	}
	return posix, nil
}

// ExactProcessQueryMatches reports whether an environment with metadata
// is selected by q: every member of q.Metadata is present in metadata
// with a canonically equal value (member order never matters, presence
// does). A nil query or one without metadata selects everything.
// Provider options are the provider's to interpret.
func ExactProcessQueryMatches(q *ExactProcessEnvironmentQuery, metadata map[string]canonjson.Value) bool {
	if q == nil {
		return true
	}
	for name, want := range q.Metadata {
		got, ok := metadata[name]
		if !ok || !canonjson.Equal(got, want) {
			return false
		}
	}
	return true
}

// SameProcessTermination reports whether a and b are the same
// termination: the same kind with the same exit code, timeout or signal.
// A nil termination matches nothing.
func SameProcessTermination(a, b *ProcessTermination) bool {
	if a == nil || b == nil {
		return false
	}
	return a.Kind == b.Kind && samePtr(a.ExitCode, b.ExitCode) && samePtr(a.TimeoutMs, b.TimeoutMs) && samePtr(a.Signal, b.Signal)
}

func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// offersExactProcess reports whether p offers a non-nil exact-process
// facet. A typed nil (a nil pointer in the interface) is not an offer.
func offersExactProcess(p Provider) bool {
	h, ok := p.(ExactProcessHost)
	if !ok {
		return false
	}
	f := h.ExactProcess()
	if f == nil {
		return false
	}
	v := reflect.ValueOf(f)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return !v.IsNil()
	}
	return true
}

package scripted

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// envState is one environment as the backend holds it.
type envState struct {
	b        *backend
	id, name string
	metadata map[string]canonjson.Value
	profile  *profile.Profile

	// nativeMu serializes native continuation admission (check the
	// boundary, then admit).
	nativeMu sync.Mutex

	mu        sync.Mutex
	files     map[string]string
	turn      int
	destroyed bool
	// sessions and runs by id; every turn is a run of one session.
	sessions map[string]*sessionState
	runs     map[string]*runState
	// turnKeys maps a turn id to the run it admitted (turn idempotency).
	turnKeys map[string]*runState
	// acks are interaction acknowledgements by operation id.
	acks map[string][]*contract.InteractionAcknowledgement
	// cancels are cancellation operations by operation id.
	cancels map[string]*cancelRecord
	// natives are native continuation operations by operation id.
	natives map[string]*nativeRecord
	// legacy checkpoints (no recovery semantics): file snapshots by id.
	legacy    map[string]map[string]string
	legacySeq int
	// branching is the durable branching state of this source
	// environment.
	branching branchState
}

func (st *envState) isDestroyed() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.destroyed
}

// environment is a client view of one environment the provider holds,
// with every ability but answering interactions.
type environment struct {
	p        *Provider
	st       *envState
	creation contract.Creation
}

// Environment is a scripted environment of a provider that originates
// interactions (its script has interaction steps). Besides
// contract.Environment it implements every optional environment ability
// — Dispatcher, SessionOpener, InteractionResponder, WorkspaceReader,
// WorkspaceWriter, CommandExecutor, LegacyCheckpointer, LegacyForker,
// DurableBrancher, Placer and Observer — all declared by the provider's
// capabilities — and OwnedStreamer, the stream its execution owner reads. A provider that cannot originate interactions (no
// interaction step, or an in-process worker) returns environments with
// the same abilities but InteractionResponder, and declares no
// interactions.
type Environment struct {
	*environment
}

// plainEnvironment is an environment of a provider that originates no
// interactions.
type plainEnvironment struct {
	*environment
}

var (
	_ contract.Environment          = (*Environment)(nil)
	_ contract.Dispatcher           = (*Environment)(nil)
	_ contract.SessionOpener        = (*Environment)(nil)
	_ contract.InteractionResponder = (*Environment)(nil)
	_ contract.WorkspaceReader      = (*Environment)(nil)
	_ contract.WorkspaceWriter      = (*Environment)(nil)
	_ contract.CommandExecutor      = (*Environment)(nil)
	_ contract.LegacyCheckpointer   = (*Environment)(nil)
	_ contract.LegacyForker         = (*Environment)(nil)
	_ contract.DurableBrancher      = (*Environment)(nil)
	_ contract.Placer               = (*Environment)(nil)
	_ contract.Observer             = (*Environment)(nil)
	_ contract.OwnedStreamer        = (*Environment)(nil)
	_ contract.Environment          = (*plainEnvironment)(nil)
	_ contract.OwnedStreamer        = (*plainEnvironment)(nil)
)

// view returns st as the provider's clients see it, with the creation
// verdict of the call that returns it.
func (p *Provider) view(st *envState, creation contract.Creation) contract.Environment {
	core := &environment{p: p, st: st, creation: creation}
	if p.b.interactive {
		return &Environment{core}
	}
	return &plainEnvironment{core}
}

// ID implements contract.Environment.
func (e *environment) ID() string { return e.st.id }

// Provider implements contract.Environment.
func (e *environment) Provider() string { return e.st.b.name }

// Name implements contract.Environment.
func (e *environment) Name() string { return e.st.name }

// Creation implements contract.Environment.
func (e *environment) Creation() contract.Creation { return e.creation }

// Metadata implements contract.Environment: a detached copy.
func (e *environment) Metadata() map[string]canonjson.Value { return maps.Clone(e.st.metadata) }

// Capabilities implements contract.Environment: the provider's document
// applies.
func (e *environment) Capabilities() *contract.Capabilities { return nil }

// Status implements contract.Environment.
func (e *environment) Status(ctx context.Context) (contract.EnvironmentStatus, error) {
	if e.st.isDestroyed() {
		return contract.EnvironmentStopped, nil
	}
	return contract.EnvironmentRunning, nil
}

// Destroy implements contract.Environment. Live runs are cancelled (their
// outstanding interactions with them); the workspace and sessions are
// gone.
func (e *environment) Destroy(ctx context.Context) error {
	e.st.destroy()
	return nil
}

func (st *envState) destroy() {
	st.mu.Lock()
	st.destroyed = true
	var live []*runState
	for _, r := range st.runs {
		live = append(live, r)
	}
	st.mu.Unlock()
	for _, r := range live {
		r.stop()
	}
}

// ErrDestroyed is wrapped by every operation on a destroyed environment.
// It wraps contract.ErrDestroyed.
var ErrDestroyed = fmt.Errorf("scripted: %w", contract.ErrDestroyed)

func (st *envState) gone() error { return fmt.Errorf("%w: %s", ErrDestroyed, st.id) }

// ReadFile implements contract.WorkspaceReader.
func (e *environment) ReadFile(ctx context.Context, path, sessionID string) (string, error) {
	st := e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return "", st.gone()
	}
	content, ok := st.files[path]
	if !ok {
		return "", &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	}
	return content, nil
}

// WriteFile implements contract.WorkspaceWriter.
func (e *environment) WriteFile(ctx context.Context, path, content, sessionID string) error {
	if !profile.IsSafeRelativePath(path, false) {
		return fmt.Errorf("scripted: %q is not a safe workspace path", path)
	}
	st := e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return st.gone()
	}
	st.files[path] = content
	return nil
}

// Placement implements contract.Placer.
func (e *environment) Placement(ctx context.Context) (*contract.PlacementInfo, error) {
	return &contract.PlacementInfo{Kind: "local"}, nil
}

// Observe implements contract.Observer: the environment's identity,
// lifecycle and placement, as the provider itself reports them. Every
// other surface is absent (the capability document declares only these).
func (e *environment) Observe(ctx context.Context) (*contract.EnvironmentObservation, error) {
	st := e.st
	now := timestamp(st.b.now())
	subject := contract.ProviderIdentity{Provider: st.b.name, EnvironmentID: st.id, Backend: ptr("scripted")}
	reported := &contract.ObservationProvenance{Origin: contract.OriginReported, ObservedAt: now, Source: ptr("scripted")}
	status := string(contract.EnvironmentRunning)
	if st.isDestroyed() {
		status = string(contract.EnvironmentStopped)
	}
	local := contract.PlacementDescriptor{Kind: "local"}
	return &contract.EnvironmentObservation{
		Subject:    subject,
		CapturedAt: now,
		Identity:   &contract.Observation[contract.ProviderIdentity]{State: contract.ObservationKnown, Value: &subject, Provenance: reported},
		Lifecycle: &contract.Observation[contract.EnvironmentLifecycle]{State: contract.ObservationKnown, Provenance: reported,
			Value: &contract.EnvironmentLifecycle{Status: status,
				Continuity:  &contract.EnvironmentLifecycleContinuity{Resumable: true, Mode: ptr("native")},
				Persistence: &contract.EnvironmentLifecyclePersistence{Durable: false, Scope: ptr("ephemeral")}}},
		Placement: &contract.ObservedPlacement{Requested: &local,
			Verified: &contract.Observation[contract.PlacementDescriptor]{State: contract.ObservationKnown, Value: &local, Provenance: reported}},
	}, nil
}

// Exec implements contract.CommandExecutor with scripted results and no
// real process. The script's exec rules answer first (in order; the
// first whose match fits the command). Without a rule, three built-ins
// answer: "echo ARGS…" prints its arguments, "cat PATH" prints a
// workspace file, and "true"/"false" exit 0/1; anything else exits 127
// (command not found). A destroyed environment refuses.
func (e *environment) Exec(ctx context.Context, command string, req *contract.ExecRequest) (*contract.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := e.st
	if st.isDestroyed() {
		return nil, st.gone()
	}
	for _, rule := range st.b.script.Exec {
		if matchText(rule.Match, command) {
			return &contract.ExecResult{ExitCode: rule.ExitCode, Stdout: rule.Stdout, Stderr: rule.Stderr}, nil
		}
	}
	fields := strings.Fields(command)
	switch {
	case len(fields) == 0:
		return &contract.ExecResult{ExitCode: 127, Stderr: "scripted: empty command\n"}, nil
	case fields[0] == "echo":
		return &contract.ExecResult{Stdout: strings.Join(fields[1:], " ") + "\n"}, nil
	case fields[0] == "true" && len(fields) == 1:
		return &contract.ExecResult{}, nil
	case fields[0] == "false" && len(fields) == 1:
		return &contract.ExecResult{ExitCode: 1}, nil
	case fields[0] == "cat" && len(fields) == 2:
		content, err := e.ReadFile(ctx, fields[1], "")
		if err != nil {
			return &contract.ExecResult{ExitCode: 1, Stderr: "cat: " + fields[1] + ": No such file or directory\n"}, nil
		}
		return &contract.ExecResult{Stdout: content}, nil
	}
	return &contract.ExecResult{ExitCode: 127, Stderr: fmt.Sprintf("scripted: %s: command not found\n", fields[0])}, nil
}

// Checkpoint implements contract.LegacyCheckpointer: a snapshot of the
// workspace files. It carries no recovery semantics (no key, no lookup,
// no cleanup); durable branching is WorkspaceBranching.
func (e *environment) Checkpoint(ctx context.Context, req *contract.CheckpointRequest) (*contract.CheckpointRef, error) {
	if req != nil {
		if _, err := contract.Validate(contract.KindCheckpointRequest, contract.CheckpointRequestSchema, req); err != nil {
			return nil, err
		}
	}
	st := e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return nil, st.gone()
	}
	st.legacySeq++
	id := fmt.Sprintf("%s-legacy-checkpoint-%d", st.id, st.legacySeq)
	if st.legacy == nil {
		st.legacy = map[string]map[string]string{}
	}
	st.legacy[id] = maps.Clone(st.files)
	ref := &contract.CheckpointRef{ID: id, Provider: ptr(st.b.name)}
	if req != nil {
		ref.Metadata = maps.Clone(req.Metadata)
	}
	return ref, nil
}

// Fork implements contract.LegacyForker: a new environment whose
// workspace is the checkpoint's snapshot. It carries no recovery
// semantics.
func (e *environment) Fork(ctx context.Context, from *contract.CheckpointRef, req *contract.ForkRequest) (contract.Environment, error) {
	if from == nil {
		return nil, errors.New("scripted: fork needs a checkpoint")
	}
	if req != nil {
		if _, err := contract.Validate(contract.KindForkRequest, contract.ForkRequestSchema, req); err != nil {
			return nil, err
		}
	}
	st := e.st
	st.mu.Lock()
	files, ok := st.legacy[from.ID]
	destroyed := st.destroyed
	st.mu.Unlock()
	if destroyed {
		return nil, st.gone()
	}
	if !ok || from.Provider != nil && *from.Provider != st.b.name {
		return nil, fmt.Errorf("scripted: checkpoint %s is not a checkpoint of %s", from.ID, st.id)
	}
	in := &contract.CreateInput{Profile: profile.Ref{Inline: st.profile}}
	if req != nil {
		in.Name, in.Metadata = req.Name, req.Metadata
	}
	fork, err := st.b.provision(in, maps.Clone(files))
	if err != nil {
		return nil, err
	}
	return e.p.view(fork, contract.CreationCreated), nil
}

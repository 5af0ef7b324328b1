package contract

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

// Provider creates agent environments: a model API, a coding-agent CLI, a
// sandbox or a remote sidecar behind one contract. Optional abilities are
// separate interfaces a provider's types implement exactly when the
// capability document declares them (see CheckExposure).
type Provider interface {
	// Name is the provider's name; every reference it mints carries it.
	Name() string
	// Capabilities returns the provider's capability document.
	Capabilities(ctx context.Context) (*Capabilities, error)
	// Create provisions an environment and returns it only once it can
	// accept a turn. With an idempotency key, the same canonical input
	// returns the same environment (Creation replayed) and a changed input
	// fails with ErrIdempotencyConflict before any second create effect.
	Create(ctx context.Context, in *CreateInput) (Environment, error)
}

// Environment is one provisioned agent environment.
type Environment interface {
	ID() string
	Provider() string
	Name() string
	// Creation is what the Create call that returned this value did:
	// created, replayed, or "" when the provider cannot prove either. A
	// consumer never destroys an environment whose creation it cannot
	// prove.
	Creation() Creation
	// Metadata is a detached snapshot of the provider-held annotations.
	// It may hold caller-authored values and proves no authorship.
	Metadata() map[string]canonjson.Value
	// Capabilities is this environment's own capability document, or nil
	// when the provider's document applies.
	Capabilities() *Capabilities
	Status(ctx context.Context) (EnvironmentStatus, error)
	// Stream runs one turn and yields its events. A turn whose profile
	// the provider cannot honor is refused before dispatch (the first and
	// only yield carries the error).
	Stream(ctx context.Context, in *TurnInput) iter.Seq2[EnvironmentEvent, error]
	Destroy(ctx context.Context) error
}

// Session is one provider session of an environment.
type Session interface {
	ID() string
	// ControlRef is the reference Dispatch returned for this session.
	ControlRef() *RunControlRef
	// Status reports the session's status; ok is false when unknown.
	Status(ctx context.Context) (status SessionStatus, ok bool, err error)
	// Events replays the session's events after the event id since
	// (exclusive; "" from the start) and follows live ones; executionID,
	// when set, selects the execution the control reference names.
	Events(ctx context.Context, since, executionID string) iter.Seq2[EnvironmentEvent, error]
	Result(ctx context.Context) (*TurnResult, error)
	// Prompt continues the session with another turn.
	Prompt(ctx context.Context, in *TurnInput) (*TurnResult, error)
	// Cancel is the legacy best-effort cancellation.
	Cancel(ctx context.Context) error
}

// Optional provider abilities.
type (
	// ProfileValidator validates a profile ahead of create
	// (profile.validation).
	ProfileValidator interface {
		ValidateProfile(ctx context.Context, ref profile.Ref) (*ProfileValidation, error)
	}
	// EnvironmentGetter finds an environment by id; (nil, nil) when none.
	EnvironmentGetter interface {
		Get(ctx context.Context, id string) (Environment, error)
	}
	// EnvironmentLister lists environments.
	EnvironmentLister interface {
		List(ctx context.Context, q *EnvironmentQuery) ([]EnvironmentSummary, error)
	}
	// ContextTransferrer admits approved portable context into a fresh
	// session (contextTransfer: transfer, retry idempotency and lookup
	// all durable).
	ContextTransferrer interface {
		TransferContext(ctx context.Context, req *ContextTransferRequest) (*ContextTransferResult, error)
		// LookupContextTransfer recovers an earlier transfer's result; nil
		// when unknown.
		LookupContextTransfer(ctx context.Context, req *ContextTransferRequest) (*ContextTransferResult, error)
	}
	// BranchingProvider recovers durable workspace branching for a source
	// environment after a restart; nil when unavailable.
	BranchingProvider interface {
		BranchingFor(ctx context.Context, sourceEnvironmentID string) (WorkspaceBranching, error)
	}
)

// Optional environment abilities.
type (
	// OwnedStreamer streams a turn for its execution owner (the runtime
	// that runs it): Stream's public events plus the private
	// native.session.observed event once the provider observed its own
	// conversation identity (NSO-01). The owner binds the observation to
	// its execution (NSO-02) and never forwards it (NSO-03);
	// Environment.Stream itself stays public and never yields it.
	OwnedStreamer interface {
		StreamOwned(ctx context.Context, in *TurnInput) iter.Seq2[EnvironmentEvent, error]
	}
	// Dispatcher starts a detached run (streaming.detach).
	Dispatcher interface {
		Dispatch(ctx context.Context, in *TurnInput) (*SessionRef, error)
	}
	// SessionOpener opens a session by id (streaming.detach, replay or
	// sessions.continue). A reference naming a different run for the same
	// session is refused; another run's events are never served.
	SessionOpener interface {
		Session(ctx context.Context, id string, ref *RunControlRef) (Session, error)
	}
	// InteractionResponder answers typed interaction requests
	// (interactions), on an environment or a session.
	InteractionResponder interface {
		RespondToInteraction(ctx context.Context, cmd *InteractionResponseCommand) (*InteractionAcknowledgement, error)
	}
	// WorkspaceReader reads workspace files (workspace.read). A path
	// with no file is an error matching fs.ErrNotExist (the contract's
	// not-found, as for exact-process reads).
	WorkspaceReader interface {
		ReadFile(ctx context.Context, path, sessionID string) (string, error)
	}
	// WorkspaceWriter writes workspace files (workspace.write).
	WorkspaceWriter interface {
		WriteFile(ctx context.Context, path, content, sessionID string) error
	}
	// CommandExecutor runs commands in the workspace (workspace.exec).
	CommandExecutor interface {
		Exec(ctx context.Context, command string, req *ExecRequest) (*ExecResult, error)
	}
	// LegacyCheckpointer takes a legacy checkpoint (branching.checkpoint);
	// it carries no recovery semantics and is not durable branching.
	LegacyCheckpointer interface {
		Checkpoint(ctx context.Context, req *CheckpointRequest) (*CheckpointRef, error)
	}
	// LegacyForker forks from a legacy checkpoint (branching.fork).
	LegacyForker interface {
		Fork(ctx context.Context, from *CheckpointRef, req *ForkRequest) (Environment, error)
	}
	// DurableBrancher exposes durable workspace branching (retrySafe,
	// lookup and cleanup together).
	DurableBrancher interface {
		WorkspaceBranching() WorkspaceBranching
	}
	// Placer reports where the environment runs (placement).
	Placer interface {
		Placement(ctx context.Context) (*PlacementInfo, error)
	}
	// Observer returns a normalized observation (observation).
	Observer interface {
		Observe(ctx context.Context) (*EnvironmentObservation, error)
	}
)

// Optional session abilities.
type (
	// RunCanceller cancels one exact run with a digest-bound request
	// (retainedControl).
	RunCanceller interface {
		CancelRun(ctx context.Context, req *RunCancellationRequest) (*RunCancellationAcknowledgement, error)
	}
	// NativeContinuer continues a session natively from a proven boundary
	// (nativeContinuation).
	NativeContinuer interface {
		ContextBoundary(ctx context.Context) (*NativeContextBoundaryProof, error)
		ContinueNative(ctx context.Context, req *NativeContextContinuationRequest, opts NativeContinuationOptions) (*NativeContinuationResult, error)
	}
)

// NativeContinuationOptions are the runtime controls of a native
// continuation; none of them is part of the request digest.
type NativeContinuationOptions struct {
	// Turn is the exact new user turn the request's turnDigest binds
	// (NativeContextContinuationTurnDigest). The request carries only the
	// digest, so the turn travels here; a provider refuses a turn whose
	// digest differs before any effect.
	Turn NativeContextContinuationTurn
	// OnAdmission, with nativeContinuation.admissionControl, is called
	// once with the exact new run before the result is awaited.
	OnAdmission func(ExactRunControlRef)
	// Credential is the seat stage's credential request for the new turn
	// (nil without seats): a native continuation is a new turn, so the
	// provider's account owner binds its credential from it (RG-07).
	Credential *CredentialRequest
}

// ExposureError reports an ability whose declaration and implementation
// disagree: declared but not implemented, or implemented but not declared.
type ExposureError struct {
	// Ability names the interface (Dispatcher, SessionOpener, …).
	Ability string
	// Declared is what the capability document says.
	Declared bool
	// Gate names the capability members that decide it.
	Gate string
}

func (e *ExposureError) Error() string {
	if e.Declared {
		return fmt.Sprintf("%s is declared (%s) but not implemented", e.Ability, e.Gate)
	}
	return fmt.Sprintf("%s is implemented but not declared (%s is false or absent)", e.Ability, e.Gate)
}

func exposure[I any](x any, name, gate string, declared bool) error {
	_, implemented := x.(I)
	return disagreement(implemented, name, gate, declared)
}

// CheckProviderExposure reports every provider ability whose declaration in
// caps and implementation by p disagree. The exact-process facet counts as
// implemented when p is an ExactProcessHost whose ExactProcess returns a
// non-nil facet.
func CheckProviderExposure(caps *Capabilities, p Provider) error {
	return errors.Join(
		exposure[ProfileValidator](p, "ProfileValidator", "profile.validation", caps.Profile.Validation),
		exposure[ContextTransferrer](p, "ContextTransferrer", "contextTransfer", caps.ContextTransfer != nil),
		exposure[BranchingProvider](p, "BranchingProvider", "branching.retrySafe+lookup+cleanup", caps.Branching.Durable()),
		disagreement(offersExactProcess(p), "ExactProcessHost", "exactProcess", caps.ExactProcess != nil),
	)
}

// disagreement reports an ability whose implementation (or offer, for an
// accessor returning a non-nil facet) and declaration disagree.
func disagreement(implemented bool, name, gate string, declared bool) error {
	if implemented == declared {
		return nil
	}
	return &ExposureError{Ability: name, Declared: declared, Gate: gate}
}

// CheckExposure reports every environment ability whose declaration in
// caps (the environment's own document when it has one) and
// implementation by env disagree: optional methods are absent exactly when
// their capability is false.
func CheckExposure(caps *Capabilities, env Environment) error {
	if own := env.Capabilities(); own != nil {
		caps = own
	}
	st := caps.Streaming
	return errors.Join(
		exposure[Dispatcher](env, "Dispatcher", "streaming.detach", st.Detach),
		exposure[SessionOpener](env, "SessionOpener", "streaming.detach|replay or sessions.continue", st.Detach || st.Replay || caps.Sessions.Continue),
		exposure[InteractionResponder](env, "InteractionResponder", "interactions", caps.Interactions != nil),
		exposure[WorkspaceReader](env, "WorkspaceReader", "workspace.read", caps.Workspace.Read),
		exposure[WorkspaceWriter](env, "WorkspaceWriter", "workspace.write", caps.Workspace.Write),
		exposure[CommandExecutor](env, "CommandExecutor", "workspace.exec", caps.Workspace.Exec),
		exposure[LegacyCheckpointer](env, "LegacyCheckpointer", "branching.checkpoint", caps.Branching.Checkpoint),
		exposure[LegacyForker](env, "LegacyForker", "branching.fork", caps.Branching.Fork),
		exposure[DurableBrancher](env, "DurableBrancher", "branching.retrySafe+lookup+cleanup", caps.Branching.Durable()),
		exposure[Placer](env, "Placer", "placement", caps.Placement),
		exposure[Observer](env, "Observer", "observation", caps.Observation != nil),
	)
}

// CheckSessionExposure reports every session ability whose declaration
// and implementation disagree.
func CheckSessionExposure(caps *Capabilities, s Session) error {
	return errors.Join(
		exposure[RunCanceller](s, "RunCanceller", "retainedControl", caps.RetainedControl != nil),
		exposure[NativeContinuer](s, "NativeContinuer", "nativeContinuation", caps.NativeContinuation != nil),
		exposure[InteractionResponder](s, "InteractionResponder", "interactions", caps.Interactions != nil),
	)
}

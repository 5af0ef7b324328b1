package scripted

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// DefaultName is the provider name unless Options.Name says otherwise.
const DefaultName = "scripted"

// Options adjusts New.
type Options struct {
	// Name is the provider name; DefaultName when empty.
	Name string
	// Now replaces time.Now.
	Now func() time.Time
	// OnPrompt, when set, answers every turn instead of the script: the
	// provider streams the events it returns, as they are (the in-process
	// worker of the quickstart), giving an event without an id one so
	// replay can name it. Events without a terminal event make a turn that
	// never ended, which the kernel records as a failure.
	OnPrompt OnPrompt
	// ForksOwnCheckpoints selects how durable forks hold their
	// checkpoint. False (the default): a fork depends on its checkpoint,
	// so deleting a checkpoint with live forks answers in_use with the
	// blocking fork environments and deletes nothing. True: every fork
	// holds its own copy, so the checkpoint is deleted without waiting
	// for its forks (seed 000; spec M.2, P.2).
	ForksOwnCheckpoints bool
	// OnTurn, when set, is told of every turn the provider starts playing
	// (a replayed or re-attached turn is not started again, so it is not
	// told), before the turn's first event; it must return promptly. A
	// test that must prove a turn ran once however often it was asked
	// for counts here.
	OnTurn func(TurnStarted)
	// MountsMCP declares MCP support (ProfileCapabilities.MCP), so a
	// profile with MCP servers is not refused; with OnPrompt, the turn's
	// profile (PromptContext.Input.Profile) names them and OnPrompt
	// connects to them as a harness would (a stand-in for an external
	// harness in tests). The provider itself starts no server.
	MountsMCP bool
}

// TurnStarted is a turn the provider started playing (Options.OnTurn).
type TurnStarted struct {
	// EnvironmentID is the environment the turn runs in.
	EnvironmentID string
	// TurnID is the turn id the caller named it with; "" when unnamed.
	TurnID string
	// Prompt is the turn's prompt text.
	Prompt string
}

// OnPrompt answers one turn with the events the worker emits.
type OnPrompt func(ctx context.Context, prompt string, pc PromptContext) ([]contract.EnvironmentEvent, error)

// PromptContext tells an OnPrompt function which turn it answers.
type PromptContext struct {
	// Round counts the environment's turns from 0.
	Round int
	// EnvironmentID is the environment the turn runs in.
	EnvironmentID string
	// Input is the turn as the caller sent it (profile, session, parts).
	Input *contract.TurnInput
}

// InProcess returns a provider whose turns are answered by onPrompt: an
// offline worker for examples and tests, with no script and no network.
func InProcess(onPrompt OnPrompt) *Provider {
	return New(nil, Options{Name: "in-process", OnPrompt: onPrompt})
}

// backend is everything the provider remembers: what a remote service
// would hold. Provider values are clients of one backend, so a client
// built by Reconnect (a restarted process) recovers every environment,
// run, session, acknowledgement and durable operation.
type backend struct {
	name   string
	script *Script
	now    func() time.Time
	answer OnPrompt
	// onTurn is Options.OnTurn.
	onTurn func(TurnStarted)
	// mcp is Options.MountsMCP.
	mcp bool
	// ownCopies: forks hold their own checkpoint copy.
	ownCopies bool
	// interactive: the script originates interactions, of kinds.
	interactive bool
	kinds       []string
	// caps is the provider's document for its own checks; callers get a
	// fresh copy from Capabilities.
	caps  *contract.Capabilities
	keyed contract.KeyedCreate[*envState]

	// transferMu serializes context transfers (check, then admit).
	transferMu sync.Mutex

	mu        sync.Mutex
	envs      map[string]*envState
	used      map[int]bool
	seq       int
	transfers map[string]*transferRecord
	// exactEnvs are the exact-process environments, by id.
	exactEnvs  map[string]*exactEnvState
	exactSeq   int
	exactKeyed contract.KeyedExactProcessCreate[*exactEnvState]

	// Counters of effects, for tests that prove "refused before spend"
	// and "replayed without dispatch".
	creates, turns, transferCount, freshSessions, continuations, exactCreates atomic.Int64
	// credentials are the credential requests the account owner received.
	credentials []contract.CredentialRequest
}

// Provider is the scripted provider. It is safe for concurrent use.
//
// It implements every optional ability of the provider contract with real
// semantics over in-memory state: profile validation, lookup and listing
// of environments, durable context transfer and durable branching
// recovery (BranchingFor). Its environments and sessions implement the
// rest (see Environment and Session); Capabilities declares exactly that
// set. Interactions are declared only when the script originates them
// (it has interaction steps); an in-process worker originates none.
// Exact-process execution (ExactProcess) is offered and declared only when
// the script describes processes, since a launch no rule matches is
// refused.
type Provider struct {
	b *backend
}

var (
	_ contract.Provider           = (*Provider)(nil)
	_ contract.EnvironmentGetter  = (*Provider)(nil)
	_ contract.EnvironmentLister  = (*Provider)(nil)
	_ contract.ProfileValidator   = (*Provider)(nil)
	_ contract.ContextTransferrer = (*Provider)(nil)
	_ contract.BranchingProvider  = (*Provider)(nil)
)

// New returns a provider playing script.
func New(script *Script, opts Options) *Provider {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if script == nil {
		script = &Script{}
	}
	kinds := interactionKinds(script)
	p := &Provider{b: &backend{name: opts.Name, script: script, now: opts.Now, answer: opts.OnPrompt, onTurn: opts.OnTurn, mcp: opts.MountsMCP,
		ownCopies: opts.ForksOwnCheckpoints, kinds: kinds, interactive: opts.OnPrompt == nil && len(kinds) > 0,
		envs: map[string]*envState{}, used: map[int]bool{}, transfers: map[string]*transferRecord{},
		exactEnvs: map[string]*exactEnvState{}}}
	p.b.caps, _ = p.Capabilities(context.Background())
	return p
}

// Reconnect returns a new client of the same provider state, as a
// restarted process would build one: it holds no environment, session or
// run object of p, and recovers them all by id.
func (p *Provider) Reconnect() *Provider { return &Provider{b: p.b} }

// Name implements contract.Provider.
func (p *Provider) Name() string { return p.b.name }

// Creates returns how many environments were provisioned.
func (p *Provider) Creates() int64 { return p.b.creates.Load() }

// Turns returns how many turns were dispatched.
func (p *Provider) Turns() int64 { return p.b.turns.Load() }

// Counters are the provider's durable-operation effects, for tests that
// prove a replay or a refusal dispatched nothing.
type Counters struct {
	// Transfers counts admitted context transfers.
	Transfers int64
	// FreshSessions counts sessions created to admit a context.
	FreshSessions int64
	// NativeContinuations counts admitted native continuations.
	NativeContinuations int64
}

// Counters returns the provider's effect counters.
func (p *Provider) Counters() Counters {
	return Counters{Transfers: p.b.transferCount.Load(), FreshSessions: p.b.freshSessions.Load(),
		NativeContinuations: p.b.continuations.Load()}
}

// EffectCounts returns Counters by name (transfers, freshSessions,
// nativeContinuations), as a server reports a provider's effects
// (sidecar.EffectCounter).
func (p *Provider) EffectCounts() map[string]int64 {
	c := p.Counters()
	return map[string]int64{"transfers": c.Transfers, "freshSessions": c.FreshSessions, "nativeContinuations": c.NativeContinuations}
}

// interactionKinds are the kinds of the interaction requests s
// originates, each once, in script order.
func interactionKinds(s *Script) []string {
	var kinds []string
	for _, t := range s.Turns {
		for _, step := range t.Steps {
			if step.Interaction == nil {
				continue
			}
			if k, ok := step.Interaction.Request.Get("kind"); ok && !slices.Contains(kinds, k.Str()) {
				kinds = append(kinds, k.Str())
			}
		}
	}
	return kinds
}

// Capabilities implements contract.Provider: what the scripted provider
// really does, and nothing more. Every optional ability it declares is
// implemented by Provider, Environment or Session.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	// Every block of the document lives in one allocation: a fresh,
	// caller-owned document per call at the cost of one.
	d := new(struct {
		caps     contract.Capabilities
		retained contract.RetainedControlCapabilities
		native   contract.NativeContinuationCapabilities
		transfer contract.ContextTransferCapabilities
		interact contract.InteractionCapabilities
		observe  contract.ObservationCapabilities
		cwd      contract.CwdBases
		exact    contract.ExactProcessCapabilities
		yes      [4]bool
	})
	d.yes = [4]bool{true, true, true, true}
	d.retained = contract.RetainedControlCapabilities{ExactRunIdentity: true, ResultIdentity: true, EventIdentity: true, CancellationIdempotency: true}
	d.native = contract.NativeContinuationCapabilities{AtomicBoundary: true, RequestIdempotency: true, AdmissionControl: &d.yes[0]}
	d.transfer = contract.ContextTransferCapabilities{FreshSession: true, RequestIdempotency: true, Lookup: true}
	d.observe = contract.ObservationCapabilities{Identity: true, Lifecycle: true, Placement: true}
	d.cwd = contract.CwdBases{Repository: true}
	d.caps = contract.Capabilities{
		Profile: contract.ProfileCapabilities{
			SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true},
			Instructions: true,
			Tools:        true,
			Permissions:  true,
			MCP:          p.b.mcp,
			Resources:    contract.ProfileResourceCapabilities{Files: true, Instructions: true},
			Validation:   true,
		},
		Streaming:          contract.StreamingCapabilities{Live: true, Replay: true, Detach: true, TurnIdempotency: true},
		Sessions:           contract.SessionCapabilities{Continue: true},
		RetainedControl:    &d.retained,
		NativeContinuation: &d.native,
		ContextTransfer:    &d.transfer,
		Workspace:          contract.WorkspaceCapabilities{Read: true, Write: true, Exec: true, CwdBases: &d.cwd},
		Branching:          contract.BranchingCapabilities{Checkpoint: true, Fork: true, RetrySafe: &d.yes[1], Lookup: &d.yes[2], Cleanup: &d.yes[3]},
		Placement:          true,
		// An in-process worker reports usage only if it chooses to.
		Usage:       p.b.answer == nil,
		Observation: &d.observe,
	}
	if len(p.b.script.Processes) > 0 {
		d.exact = contract.ExactProcessCapabilities{Egress: slices.Clone(exactEgress)}
		d.caps.ExactProcess = &d.exact
	}
	if p.b.interactive {
		d.interact = contract.InteractionCapabilities{
			Kinds: slices.Clone(p.b.kinds),
			AnswerFieldTypes: []contract.InteractionFieldType{contract.InteractionFieldTypeText, contract.InteractionFieldTypeNumber,
				contract.InteractionFieldTypeBoolean, contract.InteractionFieldTypeSelect, contract.InteractionFieldTypeSecret},
			ResponseScopes: []contract.InteractionResponseScope{contract.ResponseScopeInteraction, contract.ResponseScopeSession,
				contract.ResponseScopePersistent},
			SecretAnswers: true,
			// One request at a time per run: a run waits on it.
			ConcurrentRequests:  false,
			Replay:              true,
			ResponseIdempotency: true,
		}
		d.caps.Interactions = &d.interact
	}
	// The document is valid by construction (providertest's capabilities
	// scenario validates it); validating it on every call cost a third
	// of a kernel run.
	return &d.caps, nil
}

// Create implements contract.Provider. With an idempotency key, the same
// input returns the same environment (replayed) and a changed input is
// refused before a second environment exists. A requested id that is
// taken is refused. A workspace member it does not apply (anything but a
// repository cwd) is refused before anything exists (see checkWorkspace).
func (p *Provider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if in == nil {
		in = &contract.CreateInput{}
	}
	if err := p.checkCreate(ctx, in); err != nil {
		return nil, err
	}
	st, creation, err := p.b.keyed.Do(ctx, in, func(ctx context.Context, in *contract.CreateInput) (*envState, error) {
		return p.b.provision(in, nil)
	})
	if err != nil {
		return nil, err
	}
	return p.view(st, creation), nil
}

// checkCreate refuses, before any effect, a create the provider cannot
// honor.
func (p *Provider) checkCreate(ctx context.Context, in *contract.CreateInput) error {
	caps := p.b.caps
	if err := checkWorkspace(in.Workspace); err != nil {
		return err
	}
	if w := in.Workspace; w != nil && w.Cwd != nil && !caps.Workspace.CwdBases.Accepts(w.Cwd.Base) {
		return fmt.Errorf("scripted: workspace cwd base %q: %w", w.Cwd.Base, contract.ErrUnsupported)
	}
	if in.Profile.Inline != nil {
		if err := contract.CheckProfileSupport(&caps.Profile, in.Profile.Inline); err != nil {
			return fmt.Errorf("scripted: %w", err)
		}
	}
	return p.b.bind(in.Credential)
}

// checkWorkspace refuses the workspace members the scripted provider
// does not apply (WSP-26): its workspace always starts empty, in memory,
// so a repository (repoUrl, gitRef), a provider checkpoint, a portable
// snapshot, a template environment, an image or provider options would
// be silently dropped — the caller would believe its run saw a workspace
// it never had. Each refusal names its member by JSON pointer and wraps
// contract.ErrUnsupported; only cwd is honoured.
func checkWorkspace(w *contract.WorkspaceRequest) error {
	if w == nil {
		return nil
	}
	var errs []error
	refuse := func(present bool, member string) {
		if present {
			errs = append(errs, fmt.Errorf("scripted: /workspace/%s is not applied (the workspace starts empty): %w", member, contract.ErrUnsupported))
		}
	}
	refuse(w.Snapshot != nil, "snapshot")
	refuse(w.RepoURL != nil, "repoUrl")
	refuse(w.GitRef != nil, "gitRef")
	refuse(w.Checkpoint != nil, "checkpoint")
	refuse(w.Environment != nil, "environment")
	refuse(w.Image != nil, "image")
	refuse(len(w.ProviderOptions) > 0, "providerOptions")
	return errors.Join(errs...)
}

// ErrIDTaken is wrapped by a create whose requested id names an existing
// environment.
var ErrIDTaken = errors.New("scripted: the requested environment id is taken")

// provision makes a new environment, with files when given (a fork).
func (b *backend) provision(in *contract.CreateInput, files map[string]string) (*envState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var id string
	if in.RequestedID != nil && *in.RequestedID != "" {
		id = *in.RequestedID
		if _, taken := b.envs[id]; taken {
			return nil, fmt.Errorf("%w: %s", ErrIDTaken, id)
		}
	} else {
		for {
			b.seq++
			id = fmt.Sprintf("%s-env-%d", b.name, b.seq)
			if _, taken := b.envs[id]; !taken {
				break
			}
		}
	}
	if files == nil {
		files = map[string]string{}
	}
	st := &envState{b: b, id: id, files: files, metadata: maps.Clone(in.Metadata)}
	if in.Name != nil {
		st.name = *in.Name
	}
	st.profile = in.Profile.Inline
	b.envs[id] = st
	b.creates.Add(1)
	return st, nil
}

// env returns the environment with id, destroyed or not.
func (b *backend) env(id string) *envState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.envs[id]
}

// PersistCreateKeys implements contract.CreateKeyPersister: keyed creates
// are also recorded in st, so a client over the same store — a restarted
// process — replays a key's environment while this provider holds it,
// and refuses (contract.ErrKeyedEnvironmentGone, ErrCreateInDoubt)
// rather than create a second one under the key.
func (p *Provider) PersistCreateKeys(st contract.KeyRecordStore) error {
	return p.b.keyed.Persist(contract.DurableKeys[*envState]{Store: st, Scope: "scripted/" + p.b.name,
		ID: func(e *envState) string { return e.id },
		Find: func(_ context.Context, id string) (*envState, bool, error) {
			e := p.b.env(id)
			return e, e != nil && !e.isDestroyed(), nil
		},
		// An environment handed to nobody (another client declared its
		// create in doubt first) does not live on.
		Undo: func(_ context.Context, e *envState) error { e.destroy(); return nil }})
}

// Get implements contract.EnvironmentGetter: a view of a live environment
// (no creation verdict), or nil.
func (p *Provider) Get(ctx context.Context, id string) (contract.Environment, error) {
	if st := p.b.env(id); st != nil && !st.isDestroyed() {
		return p.view(st, ""), nil
	}
	return nil, nil
}

// List implements contract.EnvironmentLister.
func (p *Provider) List(ctx context.Context, q *contract.EnvironmentQuery) ([]contract.EnvironmentSummary, error) {
	p.b.mu.Lock()
	envs := slices.Collect(maps.Values(p.b.envs))
	p.b.mu.Unlock()
	slices.SortFunc(envs, func(a, b *envState) int { return strings.Compare(a.id, b.id) })
	var out []contract.EnvironmentSummary
	for _, st := range envs {
		if st.isDestroyed() {
			continue
		}
		if q != nil && q.Name != nil && *q.Name != st.name {
			continue
		}
		status := contract.EnvironmentRunning
		s := contract.EnvironmentSummary{ID: st.id, Provider: p.b.name, Status: &status, Metadata: maps.Clone(st.metadata)}
		if st.name != "" {
			n := st.name
			s.Name = &n
		}
		out = append(out, s)
	}
	return out, nil
}

// ValidateProfile implements contract.ProfileValidator: an inline
// profile is checked against what the provider honors; a catalog id is
// refused (the provider has no named profiles).
func (p *Provider) ValidateProfile(ctx context.Context, ref profile.Ref) (*contract.ProfileValidation, error) {
	if ref.Inline == nil {
		return &contract.ProfileValidation{Issues: []contract.ProfileValidationIssue{{Level: contract.ProfileIssueError,
			Code: "named-profile-unsupported", Message: "the scripted provider has no profile catalog; send the profile inline"}}}, nil
	}
	if _, err := profile.Digest(ref.Inline); err != nil {
		return &contract.ProfileValidation{Issues: []contract.ProfileValidationIssue{{Level: contract.ProfileIssueError,
			Code: "invalid-profile", Message: err.Error()}}}, nil
	}
	if err := contract.CheckProfileSupport(&p.b.caps.Profile, ref.Inline); err != nil {
		return &contract.ProfileValidation{Issues: []contract.ProfileValidationIssue{{Level: contract.ProfileIssueError,
			Code: "unsupported-profile", Message: err.Error()}}}, nil
	}
	return &contract.ProfileValidation{OK: true, Issues: []contract.ProfileValidationIssue{}}, nil
}

// nextTurn picks the scripted turn for prompt.
func (b *backend) nextTurn(prompt string) (Turn, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, t := range b.script.Turns {
		if (t.Repeat || !b.used[i]) && t.matches(prompt) {
			b.used[i] = true
			return t, true
		}
	}
	return Turn{}, false
}

// matches reports whether t plays for prompt.
func (t Turn) matches(prompt string) bool {
	return matchText(t.Match, prompt)
}

// matchText reports whether pattern (a substring, a /regular
// expression/, or "" for anything) matches s.
func matchText(pattern, s string) bool {
	switch {
	case pattern == "":
		return true
	case isRegexp(pattern):
		re, err := regexp.Compile(pattern[1 : len(pattern)-1])
		return err == nil && re.MatchString(s)
	}
	return strings.Contains(s, pattern)
}

// timestamp is the contract's ISO UTC form of t, to the millisecond.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func ptr[T any](v T) *T { return &v }

package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/canonjson"
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
	// worker of the quickstart). Events without a terminal event make a
	// turn that never ended, which the kernel records as a failure.
	OnPrompt OnPrompt
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

// Provider is the scripted provider. It is safe for concurrent use.
type Provider struct {
	name   string
	script *Script
	now    func() time.Time
	answer OnPrompt
	keyed  contract.KeyedCreate[*Environment]

	mu   sync.Mutex
	envs map[string]*Environment
	used map[int]bool
	seq  int

	// Counters of effects, for tests that prove "refused before spend".
	creates, turns atomic.Int64
}

var (
	_ contract.Provider          = (*Provider)(nil)
	_ contract.EnvironmentGetter = (*Provider)(nil)
	_ contract.EnvironmentLister = (*Provider)(nil)
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
	return &Provider{name: opts.Name, script: script, now: opts.Now, answer: opts.OnPrompt, envs: map[string]*Environment{}, used: map[int]bool{}}
}

// Name implements contract.Provider.
func (p *Provider) Name() string { return p.name }

// Creates returns how many environments were provisioned.
func (p *Provider) Creates() int64 { return p.creates.Load() }

// Turns returns how many turns were dispatched.
func (p *Provider) Turns() int64 { return p.turns.Load() }

// Capabilities implements contract.Provider: what the scripted provider
// really does, and nothing more.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	caps := &contract.Capabilities{
		Profile: contract.ProfileCapabilities{
			SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true},
			Instructions: true,
			Tools:        true,
			Permissions:  true,
			Resources:    contract.ProfileResourceCapabilities{Files: true, Instructions: true},
		},
		Streaming: contract.StreamingCapabilities{Live: true},
		Workspace: contract.WorkspaceCapabilities{Read: true, Write: true, CwdBases: &contract.CwdBases{Repository: true}},
		Placement: true,
		// An in-process worker reports usage only if it chooses to.
		Usage: p.answer == nil,
	}
	// The document is constant and valid (providertest's capabilities
	// scenario validates it); validating it on every call cost a third
	// of a kernel run.
	return caps, nil
}

// Create implements contract.Provider. With an idempotency key, the same
// input returns the same environment (replayed) and a changed input is
// refused before a second environment exists.
func (p *Provider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if in == nil {
		in = &contract.CreateInput{}
	}
	caps, _ := p.Capabilities(ctx)
	if w := in.Workspace; w != nil && w.Cwd != nil && !caps.Workspace.CwdBases.Accepts(w.Cwd.Base) {
		return nil, fmt.Errorf("scripted: workspace cwd base %q: %w", w.Cwd.Base, contract.ErrUnsupported)
	}
	if in.Profile.Inline != nil {
		if err := contract.CheckProfileSupport(&caps.Profile, in.Profile.Inline); err != nil {
			return nil, fmt.Errorf("scripted: %w", err)
		}
	}
	env, creation, err := p.keyed.Do(ctx, in, func(ctx context.Context, in *contract.CreateInput) (*Environment, error) {
		return p.provision(in), nil
	})
	if err != nil {
		return nil, err
	}
	if creation == contract.CreationReplayed {
		return env.view(creation), nil
	}
	return env, nil
}

func (p *Provider) provision(in *contract.CreateInput) *Environment {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	id := in.RequestedID
	if id == nil || *id == "" {
		s := fmt.Sprintf("%s-env-%d", p.name, p.seq)
		id = &s
	}
	env := &Environment{provider: p, id: *id, creation: contract.CreationCreated, files: map[string]string{}}
	if in.Name != nil {
		env.name = *in.Name
	}
	if in.Profile.Inline != nil {
		env.profile = in.Profile.Inline
	}
	env.metadata = maps.Clone(in.Metadata)
	p.envs[env.id] = env
	p.creates.Add(1)
	return env
}

// Get implements contract.EnvironmentGetter.
func (p *Provider) Get(ctx context.Context, id string) (contract.Environment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if env, ok := p.envs[id]; ok && !env.destroyed {
		return env.view(""), nil
	}
	return nil, nil
}

// List implements contract.EnvironmentLister.
func (p *Provider) List(ctx context.Context, q *contract.EnvironmentQuery) ([]contract.EnvironmentSummary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []contract.EnvironmentSummary
	for _, env := range p.envs {
		if env.destroyed {
			continue
		}
		status := contract.EnvironmentRunning
		s := contract.EnvironmentSummary{ID: env.id, Provider: p.name, Status: &status}
		if env.name != "" {
			n := env.name
			s.Name = &n
		}
		out = append(out, s)
	}
	return out, nil
}

// nextTurn picks the scripted turn for prompt.
func (p *Provider) nextTurn(prompt string) (Turn, int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.script.Turns {
		if (t.Repeat || !p.used[i]) && t.matches(prompt) {
			p.used[i] = true
			return t, i, true
		}
	}
	return Turn{}, -1, false
}

// matches reports whether t plays for prompt.
func (t Turn) matches(prompt string) bool {
	switch {
	case t.Match == "":
		return true
	case isRegexp(t.Match):
		re, err := regexp.Compile(t.Match[1 : len(t.Match)-1])
		return err == nil && re.MatchString(prompt)
	}
	return strings.Contains(prompt, t.Match)
}

// Environment is a scripted environment.
type Environment struct {
	provider  *Provider
	id, name  string
	creation  contract.Creation
	metadata  map[string]canonjson.Value
	profile   *profile.Profile
	mu        sync.Mutex
	files     map[string]string
	turn      int
	destroyed bool
	// shared is the environment this value is a view of (a replayed
	// create or a Get); nil for the original.
	shared *Environment
}

var (
	_ contract.Environment     = (*Environment)(nil)
	_ contract.WorkspaceReader = (*Environment)(nil)
	_ contract.WorkspaceWriter = (*Environment)(nil)
	_ contract.Placer          = (*Environment)(nil)
)

// view returns the environment as a later Create or Get sees it: the
// same environment, with that call's creation verdict.
func (e *Environment) view(creation contract.Creation) *Environment {
	return &Environment{provider: e.provider, id: e.id, name: e.name, creation: creation, metadata: e.metadata,
		profile: e.profile, files: e.files, shared: e}
}

// ID implements contract.Environment.
func (e *Environment) ID() string { return e.id }

// Provider implements contract.Environment.
func (e *Environment) Provider() string { return e.provider.name }

// Name implements contract.Environment.
func (e *Environment) Name() string { return e.name }

// Creation implements contract.Environment.
func (e *Environment) Creation() contract.Creation { return e.creation }

// Metadata implements contract.Environment: a detached copy.
func (e *Environment) Metadata() map[string]canonjson.Value { return maps.Clone(e.metadata) }

// Capabilities implements contract.Environment: the provider's document
// applies.
func (e *Environment) Capabilities() *contract.Capabilities { return nil }

// Status implements contract.Environment.
func (e *Environment) Status(ctx context.Context) (contract.EnvironmentStatus, error) {
	if e.root().isDestroyed() {
		return contract.EnvironmentStopped, nil
	}
	return contract.EnvironmentRunning, nil
}

func (e *Environment) root() *Environment {
	if e.shared != nil {
		return e.shared
	}
	return e
}

func (e *Environment) isDestroyed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.destroyed
}

// Destroy implements contract.Environment.
func (e *Environment) Destroy(ctx context.Context) error {
	r := e.root()
	r.mu.Lock()
	r.destroyed = true
	r.mu.Unlock()
	return nil
}

// ReadFile implements contract.WorkspaceReader.
func (e *Environment) ReadFile(ctx context.Context, path, sessionID string) (string, error) {
	r := e.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroyed {
		return "", e.gone()
	}
	content, ok := r.files[path]
	if !ok {
		return "", fmt.Errorf("scripted: %s: file does not exist", path)
	}
	return content, nil
}

// WriteFile implements contract.WorkspaceWriter.
func (e *Environment) WriteFile(ctx context.Context, path, content, sessionID string) error {
	if !profile.IsSafeRelativePath(path, false) {
		return fmt.Errorf("scripted: %q is not a safe workspace path", path)
	}
	r := e.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroyed {
		return e.gone()
	}
	r.files[path] = content
	return nil
}

// ErrDestroyed is wrapped by every operation on a destroyed environment.
var ErrDestroyed = errors.New("scripted: environment was destroyed")

func (e *Environment) gone() error { return fmt.Errorf("%w: %s", ErrDestroyed, e.id) }

// Placement implements contract.Placer.
func (e *Environment) Placement(ctx context.Context) (*contract.PlacementInfo, error) {
	return &contract.PlacementInfo{Kind: "local"}, nil
}

// ErrTransport is the error a turn scripted to "die" breaks with.
var ErrTransport = errors.New("scripted: transport broke mid-turn")

// Stream implements contract.Environment: it plays the next scripted turn
// for the turn's prompt.
func (e *Environment) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		r := e.root()
		if r.isDestroyed() {
			yield(contract.EnvironmentEvent{}, e.gone())
			return
		}
		p := e.provider
		caps, _ := p.Capabilities(ctx)
		prof := r.profile
		if in != nil && in.Profile != nil {
			if err := contract.CheckProfileSupport(&caps.Profile, in.Profile); err != nil {
				yield(contract.EnvironmentEvent{}, fmt.Errorf("scripted: turn refused before dispatch: %w", err))
				return
			}
			prof = in.Profile
		}
		prompt := promptText(in)
		if p.answer != nil {
			e.answer(ctx, prompt, in, yield)
			return
		}
		turn, _, ok := p.nextTurn(prompt)
		if !ok {
			yield(contract.EnvironmentEvent{}, fmt.Errorf("scripted: no scripted turn matches prompt %q", truncate(prompt, 80)))
			return
		}
		p.turns.Add(1)
		r.mu.Lock()
		r.turn++
		turnNo := r.turn
		r.mu.Unlock()
		play := player{env: e, turnNo: turnNo, yield: yield, now: p.now, prompt: prompt}
		play.run(ctx, turn, served(p.script, turn, prof))
	}
}

// answer plays one turn answered by the provider's OnPrompt function.
func (e *Environment) answer(ctx context.Context, prompt string, in *contract.TurnInput, yield func(contract.EnvironmentEvent, error) bool) {
	r := e.root()
	r.mu.Lock()
	round := r.turn
	r.turn++
	r.mu.Unlock()
	e.provider.turns.Add(1)
	events, err := e.callWorker(ctx, prompt, PromptContext{Round: round, EnvironmentID: e.id, Input: in})
	if err != nil {
		yield(contract.EnvironmentEvent{}, fmt.Errorf("scripted: the worker failed: %w", err))
		return
	}
	for _, ev := range events {
		if !yield(ev, nil) {
			return
		}
	}
}

// callWorker calls OnPrompt, turning a panic into the turn's error.
func (e *Environment) callWorker(ctx context.Context, prompt string, pc PromptContext) (events []contract.EnvironmentEvent, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return e.provider.answer(ctx, prompt, pc)
}

func promptText(in *contract.TurnInput) string {
	if in == nil {
		return ""
	}
	var b strings.Builder
	if in.Prompt != nil {
		b.WriteString(*in.Prompt)
	}
	for _, part := range in.Parts {
		if part.Text != nil {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(*part.Text)
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// served returns the model the turn reports serving: the script's claim,
// or else what the profile requested.
func served(s *Script, t Turn, p *profile.Profile) string {
	switch {
	case t.ServedModel != "":
		return t.ServedModel
	case s.ServedModel != "":
		return s.ServedModel
	case p != nil && p.Model != nil && p.Model.Default != nil:
		return *p.Model.Default
	}
	return ""
}

// player emits one scripted turn's events.
type player struct {
	env    *Environment
	turnNo int
	seq    int
	yield  func(contract.EnvironmentEvent, error) bool
	now    func() time.Time
	prompt string
	text   strings.Builder
	result canonjson.Value
}

func (pl *player) id() string {
	pl.seq++
	return fmt.Sprintf("%s-t%d-e%d", pl.env.id, pl.turnNo, pl.seq)
}

func (pl *player) emit(typ string, data map[string]canonjson.Value, normalized *contract.StreamEvent, usage *contract.TokenUsage, mode contract.UsageMode) bool {
	id := pl.id()
	if data == nil {
		data = map[string]canonjson.Value{}
	}
	return pl.yield(contract.EnvironmentEvent{Type: typ, Data: data, ID: &id, Normalized: normalized, Usage: usage, UsageMode: mode}, nil)
}

func (pl *player) backend(model string) canonjson.Value {
	members := []canonjson.Member{
		{Name: "provider", Value: canonjson.StringValue(pl.env.provider.name)},
		{Name: "source", Value: canonjson.StringValue("scripted")},
	}
	if model != "" {
		members = append(members, canonjson.Member{Name: "model", Value: canonjson.StringValue(model)})
	}
	return canonjson.ObjectValue(members)
}

func (pl *player) run(ctx context.Context, t Turn, model string) {
	status := func(s string, detail *string) *contract.StreamEvent {
		e := contract.StatusStreamEvent(s, detail)
		return &e
	}
	cancelled := func() {
		pl.emit("execution.cancelled", map[string]canonjson.Value{"status": canonjson.StringValue("cancelled")}, status(contract.StreamStatusCancelled, nil), nil, "")
	}
	if !pl.emit("execution.started", map[string]canonjson.Value{"effectiveBackend": pl.backend(model)}, status(contract.StreamStatusStarted, nil), nil, "") {
		return
	}
	for _, step := range t.Steps {
		if err := ctx.Err(); err != nil {
			cancelled()
			return
		}
		if !pl.step(ctx, step) {
			return
		}
	}
	if err := ctx.Err(); err != nil {
		cancelled()
		return
	}
	switch t.End {
	case EndNoTerminal:
		return
	case EndDie:
		pl.yield(contract.EnvironmentEvent{}, fmt.Errorf("%w: %s", ErrTransport, t.Error))
		return
	case EndFailed:
		msg := t.Error
		if msg == "" {
			msg = "scripted failure"
		}
		pl.emit("error", map[string]canonjson.Value{"error": canonjson.StringValue(msg), "effectiveBackend": pl.backend(model)}, status(contract.StreamStatusFailed, &msg), nil, "")
	case EndCancelled:
		cancelled()
	default:
		data := map[string]canonjson.Value{
			"status":           canonjson.StringValue("completed"),
			"text":             canonjson.StringValue(pl.text.String()),
			"effectiveBackend": pl.backend(model),
		}
		if pl.result.IsValid() {
			data["result"] = pl.result
		}
		pl.emit("done", data, status(contract.StreamStatusCompleted, nil), nil, "")
	}
}

func (pl *player) step(ctx context.Context, s Step) bool {
	switch {
	case s.Text != nil:
		delta := strings.ReplaceAll(*s.Text, "{{prompt}}", pl.prompt)
		s.Text = &delta
		pl.text.WriteString(delta)
		env := pl.env
		part := contract.Part{ID: "text-" + strconv.Itoa(pl.turnNo), SessionID: env.id, MessageID: fmt.Sprintf("%s-m%d", env.id, pl.turnNo),
			Type: contract.PartTypeText, Text: ptr(pl.text.String())}
		ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part, Delta: s.Text})
		if err != nil {
			return pl.yield(contract.EnvironmentEvent{}, err)
		}
		return pl.emit(contract.EventTypeMessagePartUpdated, map[string]canonjson.Value{"delta": canonjson.StringValue(*s.Text)}, &ev, nil, "")
	case s.Usage != nil:
		mode := contract.UsageMode("")
		if s.Mode != nil {
			mode = contract.UsageMode(*s.Mode)
		}
		u := *s.Usage
		return pl.emit("usage", nil, nil, &u, mode)
	case s.ToolCall != nil:
		tc := s.ToolCall
		input := map[string]canonjson.Value{}
		for _, m := range tc.Arguments.Members() {
			input[m.Name] = m.Value
		}
		part := contract.Part{ID: tc.ID, SessionID: pl.env.id, MessageID: fmt.Sprintf("%s-m%d", pl.env.id, pl.turnNo),
			Type: contract.PartTypeTool, CallID: ptr(tc.ID), Tool: ptr(tc.Name),
			State: &contract.ToolState{Status: contract.ToolStatusPending, Input: input}}
		ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part})
		if err != nil {
			return pl.yield(contract.EnvironmentEvent{}, err)
		}
		return pl.emit(contract.EventTypeMessagePartUpdated, nil, &ev, nil, "")
	case s.Result != nil:
		pl.result = *s.Result
		return true
	case s.DelayMS != nil:
		select {
		case <-time.After(time.Duration(*s.DelayMS) * time.Millisecond):
			return true
		case <-ctx.Done():
			return true // the next step reports the cancellation
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

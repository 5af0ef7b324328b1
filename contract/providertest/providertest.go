package providertest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// Factory returns a fresh provider for one scenario.
type Factory func(t *testing.T) contract.Provider

// Options adjusts Run. Every family-specific input is optional for a
// provider that does not declare the family's ability; a provider that
// declares it must give the inputs the family documents as required, or
// the family fails (an ability nobody can exercise is not proven).
type Options struct {
	// CreateInput is the input scenarios create environments with; nil
	// means a minimal inline profile named "providertest".
	CreateInput *contract.CreateInput
	// Prompt is the turn prompt the stream, dispatch and continuation
	// scenarios send; "" means "Say hello.".
	Prompt string
	// RequireUsage makes the stream scenario demand usage even when the
	// provider does not declare it (the testkit's requireUsage).
	RequireUsage bool
	// RequireDispatch makes the dispatch scenario run even when the
	// provider does not declare detach (the testkit's requireDispatch).
	RequireDispatch bool
	// Reconnect returns a new client of p's state, as a restarted process
	// would build one: reconnected-replay, transfer-lookup and
	// branching-recovery use it. Nil means p itself (the scenarios then
	// prove recovery through fresh objects of the same client only).
	Reconnect func(p contract.Provider) contract.Provider
	// Sessions configures the session-replay and
	// cancellation-acknowledgement families.
	Sessions SessionOptions
	// Interactions configures the interaction-response family.
	Interactions InteractionOptions
	// PortableContext configures the portable-context family.
	PortableContext PortableContextOptions
	// Branching configures the workspace-branching family.
	Branching BranchingOptions
	// ExactProcess configures the exact-process-lifecycle family.
	ExactProcess ExactProcessOptions
}

// SessionOptions are the inputs of the session-replay and
// cancellation-acknowledgement families.
type SessionOptions struct {
	// Turn is the turn dispatched detached and replayed; nil means
	// {prompt: Options.Prompt}. Its run must emit at least two events.
	Turn *contract.TurnInput
	// LivePrompt, when set, is a prompt whose turn keeps running until it
	// is cancelled (or long enough for a cancellation to reach it); the
	// cancellation family then also proves a live run stops as
	// cancelled. Without it, cancellation is proven on an ended run.
	LivePrompt string
}

// InteractionOptions are the inputs of the interaction-response family,
// required when the provider declares interactions.
type InteractionOptions struct {
	// Prompt makes the provider originate one interaction request (of a
	// kind it declares) and wait for the answer; after an accepted answer
	// the turn runs to its terminal event. Required.
	Prompt string
	// ExpirePrompt makes the provider originate a request that expires
	// unanswered before its turn ends. Required.
	ExpirePrompt string
	// UnreachablePrompt makes the provider originate a request whose
	// answers it cannot deliver (acknowledged transport_failure).
	// Required.
	UnreachablePrompt string
	// Answer returns the accepted answer to a request; nil derives one
	// from the request's answer spec (a permission is granted once).
	Answer func(req *contract.InteractionRequest) contract.InteractionData
}

// ContextCounters are a provider's effects that context planning, a
// refused or replayed transfer and a refused or replayed continuation must
// not advance.
type ContextCounters struct {
	// Transfers counts admitted context transfers.
	Transfers int64
	// FreshSessions counts sessions created to admit a context.
	FreshSessions int64
	// NativeContinuations counts admitted native continuations.
	NativeContinuations int64
}

// PortableContextOptions are the inputs of the portable-context family.
type PortableContextOptions struct {
	// Counters reads p's effect counters. Required when the provider
	// declares contextTransfer or nativeContinuation: it is the evidence
	// that refusals and replays dispatched nothing.
	Counters func(p contract.Provider) ContextCounters
	// Plan plans a transfer; nil uses LocalPlan. Planning is the caller's
	// and has no provider effect; the family counts its calls.
	Plan func(ctx context.Context, req *contract.PortableContextPlanRequest) (*contract.PortableContextPlanResult, error)
	// Turn is the native continuation turn; nil means {prompt:
	// Options.Prompt}.
	Turn *contract.NativeContextContinuationTurn
}

// BranchingOptions are the inputs of the workspace-branching family.
type BranchingOptions struct {
	// ForksOwnCheckpoint declares that the provider's forks hold their
	// own copy of their checkpoint, so deleting a checkpoint with live
	// forks deletes it (seed 000). False: forks depend on their
	// checkpoint, which answers in_use until they are destroyed.
	ForksOwnCheckpoint bool
	// Placement is the fork placement; nil means {kind: local}.
	Placement *contract.PlacementInfo
	// SourceRun returns an exact run of env to checkpoint, for a provider
	// without detach; nil dispatches Options.Prompt detached.
	SourceRun func(ctx context.Context, env contract.Environment) (contract.ExactRunControlRef, error)
}

func (o Options) prompt() string {
	if o.Prompt == "" {
		return "Say hello."
	}
	return o.Prompt
}

func (o Options) createInput(key string) *contract.CreateInput {
	in := &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("providertest")}}}
	if o.CreateInput != nil {
		cp := *o.CreateInput
		in = &cp
	}
	if key != "" {
		in.IdempotencyKey = &key
	}
	name := "providertest"
	if in.Name == nil {
		in.Name = &name
	}
	return in
}

func (o Options) reconnect(p contract.Provider) contract.Provider {
	if o.Reconnect == nil {
		return p
	}
	return o.Reconnect(p)
}

// TB is what a scenario uses of its test: testing.TB plus named steps.
// Under go test a step is a subtest; under Probe it is recorded.
type TB interface {
	testing.TB
	// Step runs f as the named step of the current scenario or step and
	// reports whether it passed.
	Step(name string, f func(t TB)) bool
}

// goTest adapts *testing.T to TB.
type goTest struct{ *testing.T }

func (t goTest) Step(name string, f func(TB)) bool {
	return t.Run(name, func(t *testing.T) { f(goTest{t}) })
}

type scenario struct {
	name string
	fn   func(t TB, p contract.Provider, opts Options)
}

// scenarios are Run's scenarios in order. Names are the reference
// testkit's where one exists (spec L.1-L.6); the families run their steps
// under the testkit's step names.
var scenarios = []scenario{
	{"provider-shape", providerShape},
	{"capabilities", capabilities},
	{"capability-exposure", capabilityExposure},
	{"create-readiness", createReadiness},
	{"create-idempotency", createIdempotency},
	{"create-idempotency-collision", createIdempotencyCollision},
	{"create-idempotency-concurrent", createIdempotencyConcurrent},
	{"stream", stream},
	{"dispatch", dispatch},
	{"native-continuation-operations", nativeContinuationOperations},
	{"workspace-read-write", workspaceReadWrite},
	{"workspace-exec", workspaceExec},
	{"profile-validation", profileValidation},
	{"observation", observation},
	{"legacy-branching", legacyBranching},
	{"session-replay", sessionReplay},
	{"cancellation-acknowledgement", cancellationAcknowledgement},
	{"interaction-response", interactionResponse},
	{"portable-context", portableContext},
	{"workspace-branching", workspaceBranching},
	{"exact-process-lifecycle", exactProcessLifecycle},
	{"destroy", destroy},
}

// Names returns the names of Run's scenarios, in order.
func Names() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

// Run runs every scenario against providers from factory, each as a
// subtest with a fresh provider. A scenario about an ability the provider
// does not declare is skipped with the reason; a declared ability that
// misbehaves fails.
func Run(t *testing.T, factory Factory, opts Options) {
	t.Helper()
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.fn(goTest{t}, factory(t), opts) })
	}
}

// Report is what one scenario reported when Probe ran it.
type Report struct {
	// Failed: the scenario (some step of it) failed.
	Failed bool
	// Skipped: the scenario skipped itself.
	Skipped bool
	// FailedSteps are the paths of the steps that failed ("accepted",
	// "environment/accepted").
	FailedSteps []string
	// Messages are the failures, skips and logs, each prefixed with its
	// step path.
	Messages []string
}

// FailedStep reports whether the step at path failed.
func (r Report) FailedStep(path string) bool {
	for _, s := range r.FailedSteps {
		if s == path {
			return true
		}
	}
	return false
}

// Probe runs the named scenario against a provider from factory under a
// recording test instead of t: its failures land in the Report, never on
// t. It is how a test proves the suite has teeth — a deliberately broken
// provider must fail the scenario (and the step) that covers the broken
// rule. Cleanups the scenario registers run before Probe returns.
func Probe(t *testing.T, name string, factory Factory, opts Options) Report {
	t.Helper()
	var fn func(TB, contract.Provider, Options)
	for _, s := range scenarios {
		if s.name == name {
			fn = s.fn
		}
	}
	if fn == nil {
		t.Fatalf("providertest: no scenario %q", name)
	}
	return probe(t, fn, factory(t), opts)
}

// Check runs every scenario, as Run does, against a fresh provider from
// newProvider each, under a recording test: it needs no *testing.T, so a
// program or an Example can run the suite and print what it found. The
// reports are keyed by scenario name (Names lists them in order).
// Prefer Run in a test: it reports each failure where it happened.
func Check(newProvider func() contract.Provider, opts Options) map[string]Report {
	reports := make(map[string]Report, len(scenarios))
	for _, s := range scenarios {
		reports[s.name] = probe(nil, s.fn, newProvider(), opts)
	}
	return reports
}

// probe runs fn against p under a recorder whose parent test is t (nil
// under Check).
func probe(t testing.TB, fn func(TB, contract.Provider, Options), p contract.Provider, opts Options) Report {
	rec := &recorder{TB: t, shared: &recording{}}
	rec.run(func(r *recorder) { fn(r, p, opts) })
	rec.shared.runCleanups()
	rep := rec.shared.report
	rep.Failed, rep.Skipped = rec.failed, rec.skipped
	return rep
}

// recording is the state one Probe shares across its steps.
type recording struct {
	mu       sync.Mutex
	report   Report
	cleanups []func()
}

func (s *recording) runCleanups() {
	for {
		s.mu.Lock()
		n := len(s.cleanups)
		if n == 0 {
			s.mu.Unlock()
			return
		}
		f := s.cleanups[n-1]
		s.cleanups = s.cleanups[:n-1]
		s.mu.Unlock()
		func() {
			defer func() { _ = recover() }()
			f()
		}()
	}
}

// recorder is the TB of one scenario or step under Probe. Fatal and Skip
// end its goroutine (runtime.Goexit), as they end a test's.
type recorder struct {
	testing.TB
	shared          *recording
	parent          *recorder
	path            string
	mu              sync.Mutex
	failed, skipped bool
}

// run runs f on its own goroutine and waits for it. A panic fails the
// step instead of ending the process (Check has no test to end).
func (r *recorder) run(f func(*recorder)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				r.note("error", fmt.Sprintf("panic: %v", v))
				r.markFailed()
			}
		}()
		f(r)
	}()
	<-done
}

func (r *recorder) note(kind, msg string) {
	prefix := r.path
	if prefix == "" {
		prefix = "(scenario)"
	}
	r.shared.mu.Lock()
	r.shared.report.Messages = append(r.shared.report.Messages, fmt.Sprintf("%s %s: %s", prefix, kind, msg))
	r.shared.mu.Unlock()
}

func (r *recorder) markFailed() {
	for x := r; x != nil; x = x.parent {
		x.mu.Lock()
		x.failed = true
		x.mu.Unlock()
	}
}

// Step implements TB: f runs as a recorded step.
func (r *recorder) Step(name string, f func(TB)) bool {
	path := name
	if r.path != "" {
		path = r.path + "/" + name
	}
	child := &recorder{TB: r.TB, shared: r.shared, parent: r, path: path}
	child.run(func(c *recorder) { f(c) })
	if child.Failed() {
		r.shared.mu.Lock()
		r.shared.report.FailedSteps = append(r.shared.report.FailedSteps, path)
		r.shared.mu.Unlock()
		return false
	}
	return true
}

// Error implements testing.TB.
func (r *recorder) Error(args ...any) { r.note("error", fmt.Sprint(args...)); r.markFailed() }

// Errorf implements testing.TB.
func (r *recorder) Errorf(format string, args ...any) {
	r.note("error", fmt.Sprintf(format, args...))
	r.markFailed()
}

// Fail implements testing.TB.
func (r *recorder) Fail() { r.markFailed() }

// FailNow implements testing.TB.
func (r *recorder) FailNow() { r.markFailed(); runtime.Goexit() }

// Failed implements testing.TB.
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Fatal implements testing.TB.
func (r *recorder) Fatal(args ...any) { r.Error(args...); runtime.Goexit() }

// Fatalf implements testing.TB.
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }

// Skip implements testing.TB.
func (r *recorder) Skip(args ...any) { r.note("skip", fmt.Sprint(args...)); r.SkipNow() }

// Skipf implements testing.TB.
func (r *recorder) Skipf(format string, args ...any) {
	r.note("skip", fmt.Sprintf(format, args...))
	r.SkipNow()
}

// SkipNow implements testing.TB.
func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

// Skipped implements testing.TB.
func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// Log implements testing.TB.
func (r *recorder) Log(args ...any) { r.note("log", fmt.Sprint(args...)) }

// Logf implements testing.TB.
func (r *recorder) Logf(format string, args ...any) { r.note("log", fmt.Sprintf(format, args...)) }

// Helper implements testing.TB.
func (r *recorder) Helper() {}

// Cleanup implements testing.TB: cleanups run when Probe ends, last
// first.
func (r *recorder) Cleanup(f func()) {
	r.shared.mu.Lock()
	r.shared.cleanups = append(r.shared.cleanups, f)
	r.shared.mu.Unlock()
}

// Name implements testing.TB.
func (r *recorder) Name() string {
	if r.TB == nil {
		return "providertest/" + r.path
	}
	return r.TB.Name() + "/probe/" + r.path
}

// waitTimeout bounds every wait of a scenario, so a provider that never
// answers fails instead of hanging the suite.
const waitTimeout = 30 * time.Second

// bounded returns a context that ends after waitTimeout or with the test.
func bounded(t TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func caps(t TB, p contract.Provider) *contract.Capabilities {
	t.Helper()
	c, err := p.Capabilities(context.Background())
	if err != nil {
		t.Fatalf("Capabilities: %v", err)
	}
	if c == nil {
		t.Fatal("Capabilities returned nil")
	}
	return c
}

// envCaps is the document that governs env: its own, else the provider's.
func envCaps(t TB, p contract.Provider, env contract.Environment) *contract.Capabilities {
	if own := env.Capabilities(); own != nil {
		return own
	}
	return caps(t, p)
}

func create(t TB, p contract.Provider, in *contract.CreateInput) contract.Environment {
	t.Helper()
	env, ok := agentEnvironment(t, p, in)
	if !ok {
		t.Skip("an exact-process-only provider: Create refuses agent environments with contract.ErrUnsupported, and the document declares nothing but exactProcess")
	}
	return env
}

// agentEnvironment creates an agent environment, destroyed when the test
// ends unless the create replayed. It reports false, without failing, for
// an exact-process-only provider: one whose document declares nothing but
// exactProcess and whose Create refuses with contract.ErrUnsupported
// (spec J: exact processes are separate from agent-backed create). Any
// other create failure fails the test.
func agentEnvironment(t TB, p contract.Provider, in *contract.CreateInput) (contract.Environment, bool) {
	t.Helper()
	env, err := p.Create(context.Background(), in)
	if err != nil && errors.Is(err, contract.ErrUnsupported) && exactOnly(t, p) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if env.Creation() != contract.CreationReplayed {
			env.Destroy(context.Background())
		}
	})
	return env, true
}

// exactOnly reports whether p's document declares exactProcess and
// nothing else.
func exactOnly(t TB, p contract.Provider) bool {
	c := *caps(t, p)
	if c.ExactProcess == nil {
		return false
	}
	c.ExactProcess = nil
	return reflect.DeepEqual(c, contract.Capabilities{})
}

// ability returns x as I, or fails: the document declares what I
// implements.
func ability[I any](t TB, x any, name, gate string) I {
	t.Helper()
	v, ok := x.(I)
	if !ok {
		t.Fatalf("%s is declared, but %T does not implement %s", gate, x, name)
	}
	return v
}

// Collect reads a stream to its end, stopping at the first error, and
// returns the events it yielded.
func Collect(seq iter.Seq2[contract.EnvironmentEvent, error]) ([]contract.EnvironmentEvent, error) {
	var out []contract.EnvironmentEvent
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func terminal(events []contract.EnvironmentEvent) (contract.TerminalKind, bool) {
	for _, e := range events {
		if kind, ok := contract.EnvironmentEventTerminal(e); ok {
			return kind, true
		}
	}
	return "", false
}

// exactRef returns r as an exact reference when it states every
// coordinate.
func exactRef(r *contract.RunControlRef) (contract.ExactRunControlRef, bool) {
	if r == nil || r.SessionID == nil || r.ExecutionID == nil || r.RequestDigest == nil {
		return contract.ExactRunControlRef{}, false
	}
	return contract.ExactRunControlRef{RunID: r.RunID, Provider: r.Provider, EnvironmentID: r.EnvironmentID,
		SessionID: *r.SessionID, ExecutionID: *r.ExecutionID, RequestDigest: *r.RequestDigest}, true
}

// detached dispatches in detached, opens its session with the returned
// reference and waits for the run to end. It returns the session, the
// dispatch reference and the run's exact reference.
func detached(t TB, ctx context.Context, env contract.Environment, in *contract.TurnInput) (contract.Session, *contract.SessionRef, contract.ExactRunControlRef) {
	t.Helper()
	d := ability[contract.Dispatcher](t, env, "Dispatcher", "streaming.detach")
	o := ability[contract.SessionOpener](t, env, "SessionOpener", "streaming.detach")
	turn := *in
	turn.Detach = ptr(true)
	ref, err := d.Dispatch(ctx, &turn)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	if ref == nil || ref.ControlRef == nil {
		t.Fatal("a detached dispatch returned no control reference")
	}
	exact, ok := exactRef(ref.ControlRef)
	if !ok {
		t.Fatalf("the control reference %+v is not exact (session, execution and admission digest)", *ref.ControlRef)
	}
	s, err := o.Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatalf("Session(%s): %v", ref.ID, err)
	}
	if _, err := s.Result(ctx); err != nil {
		t.Fatalf("the dispatched run did not end: %v", err)
	}
	return s, ref, exact
}

// destroyByID destroys the environment id names, if p can find it.
func destroyByID(p contract.Provider, id string) {
	if g, ok := p.(contract.EnvironmentGetter); ok {
		if env, err := g.Get(context.Background(), id); err == nil && env != nil {
			env.Destroy(context.Background())
		}
	}
}

func ptr[T any](v T) *T { return &v }

func providerShape(t TB, p contract.Provider, _ Options) {
	if p.Name() == "" {
		t.Error("provider name is empty")
	}
	caps(t, p)
}

func capabilities(t TB, p contract.Provider, _ Options) {
	c := caps(t, p)
	if _, err := contract.Validate(contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, c); err != nil {
		t.Errorf("the capability document is invalid: %v", err)
	}
}

func capabilityExposure(t TB, p contract.Provider, opts Options) {
	c := caps(t, p)
	if err := contract.CheckProviderExposure(c, p); err != nil {
		t.Errorf("provider exposure: %v", err)
	}
	env := create(t, p, opts.createInput(""))
	if own := env.Capabilities(); own != nil {
		if _, err := contract.Validate(contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, own); err != nil {
			t.Errorf("the environment's capability document is invalid: %v", err)
		}
	}
	if err := contract.CheckExposure(c, env); err != nil {
		t.Errorf("environment exposure: %v", err)
	}
}

// createReadiness: create returns an environment that can accept a turn,
// so it reports running and nothing else.
func createReadiness(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	if env.ID() == "" || env.Provider() == "" {
		t.Errorf("environment id %q, provider %q: both must be non-empty", env.ID(), env.Provider())
	}
	if env.Provider() != p.Name() {
		t.Errorf("environment provider %q, provider name %q", env.Provider(), p.Name())
	}
	status, err := env.Status(context.Background())
	if err != nil || status != contract.EnvironmentRunning {
		t.Errorf("create must return a running environment; this one reported %q, %v", status, err)
	}
}

func createIdempotency(t TB, p contract.Provider, opts Options) {
	first := create(t, p, opts.createInput("providertest-key"))
	again, err := p.Create(context.Background(), opts.createInput("providertest-key"))
	if err != nil {
		t.Fatalf("replayed Create: %v", err)
	}
	if again.ID() != first.ID() || again.Provider() != first.Provider() {
		t.Errorf("replay returned %s/%s, want %s/%s", again.Provider(), again.ID(), first.Provider(), first.ID())
	}
	if again.Creation() == contract.CreationCreated {
		t.Error("a replayed create said created")
	}
	if first.Creation() != "" && again.Creation() != contract.CreationReplayed {
		t.Errorf("replay said %q after the first call stated %q", again.Creation(), first.Creation())
	}
}

func createIdempotencyCollision(t TB, p contract.Provider, opts Options) {
	create(t, p, opts.createInput("providertest-collision"))
	changed := opts.createInput("providertest-collision")
	other := "providertest-changed"
	changed.Name = &other
	env, err := p.Create(context.Background(), changed)
	if err == nil {
		env.Destroy(context.Background())
		t.Fatal("the same key with a changed name was accepted")
	}
	if !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Errorf("collision error %v does not match contract.ErrIdempotencyConflict", err)
	}
}

// createIdempotencyConcurrent: concurrent creates with one key and the same
// input converge on one environment, all but one replayed.
func createIdempotencyConcurrent(t TB, p contract.Provider, opts Options) {
	const n = 16
	var wg sync.WaitGroup
	envs := make([]contract.Environment, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs[i], errs[i] = p.Create(context.Background(), opts.createInput("providertest-concurrent"))
		}()
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil && errors.Is(errs[i], contract.ErrUnsupported) && exactOnly(t, p) {
			t.Skip("an exact-process-only provider: Create refuses agent environments")
		}
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if envs[i].ID() != envs[0].ID() {
			t.Errorf("create %d returned %s, create 0 returned %s", i, envs[i].ID(), envs[0].ID())
		}
		if envs[i].Creation() != contract.CreationReplayed {
			created++
		}
	}
	if created > 1 {
		t.Errorf("%d of %d concurrent keyed creates did not report replayed", created, n)
	}
	envs[0].Destroy(context.Background())
}

func stream(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	prompt := opts.prompt()
	var events []contract.EnvironmentEvent
	usage, term := false, false
	for e, err := range env.Stream(context.Background(), &contract.TurnInput{Prompt: &prompt}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if err := contract.CheckPublicEnvironmentEvent(e); err != nil {
			t.Errorf("a private event reached the public stream: %v", err)
		}
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, e); err != nil {
			t.Errorf("event %d is not a valid AgentEnvironmentEvent: %v", len(events), err)
		}
		if u, mode, ok := e.UsageReport(); ok {
			usage = true
			if u == nil || mode != "" && !mode.Known() {
				t.Errorf("event %d reports malformed usage (mode %q)", len(events), mode)
			}
		}
		if _, ok := contract.EnvironmentEventTerminal(e); ok {
			term = true
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		t.Fatal("the turn emitted no event")
	}
	if !term {
		t.Error("the turn emitted no terminal event")
	}
	if (c.Usage || opts.RequireUsage) && !usage {
		t.Error("usage is declared (or required) but no event carried usage")
	}
}

// dispatch (testkit L.1): with detach declared (or required), dispatch
// returns a session reference with an id; the session it names exposes
// exactly the session abilities the document declares.
func dispatch(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if !c.Streaming.Detach && !opts.RequireDispatch {
		t.Skip("the provider declares no detach (streaming.detach) and dispatch is not required")
	}
	d := ability[contract.Dispatcher](t, env, "Dispatcher", "streaming.detach")
	ctx := bounded(t)
	ref, err := d.Dispatch(ctx, &contract.TurnInput{Prompt: ptr(opts.prompt()), SessionID: ptr("providertest-dispatch")})
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	if ref == nil || ref.ID == "" {
		t.Fatal("dispatch must return a session id")
	}
	if _, err := contract.Validate(contract.KindSessionRef, contract.SessionRefSchema, ref); err != nil {
		t.Errorf("the session reference is invalid: %v", err)
	}
	o, ok := env.(contract.SessionOpener)
	if !ok {
		return
	}
	s, err := o.Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatalf("Session(%s): %v", ref.ID, err)
	}
	if err := contract.CheckSessionExposure(c, s); err != nil {
		t.Errorf("session exposure: %v", err)
	}
	if _, err := s.Result(ctx); err != nil {
		t.Errorf("the dispatched run did not end: %v", err)
	}
}

// session returns a session of env holding one ended run: dispatched when
// env detaches, else streamed under a session id and opened.
func session(t TB, ctx context.Context, env contract.Environment, prompt, id string) contract.Session {
	t.Helper()
	if _, ok := env.(contract.Dispatcher); ok {
		s, _, _ := detached(t, ctx, env, &contract.TurnInput{Prompt: &prompt, SessionID: &id})
		return s
	}
	if _, err := Collect(env.Stream(ctx, &contract.TurnInput{Prompt: &prompt, SessionID: &id})); err != nil {
		t.Fatalf("stream: %v", err)
	}
	o := ability[contract.SessionOpener](t, env, "SessionOpener", "sessions.continue")
	s, err := o.Session(ctx, id, nil)
	if err != nil {
		t.Fatalf("Session(%s): %v", id, err)
	}
	return s
}

// nativeContinuationOperations (testkit L.1): with nativeContinuation
// declared, sessions expose ContextBoundary and ContinueNative.
func nativeContinuationOperations(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if c.NativeContinuation == nil {
		t.Skip("the provider declares no nativeContinuation")
	}
	s := session(t, bounded(t), env, opts.prompt(), "providertest-native-operations")
	ability[contract.NativeContinuer](t, s, "NativeContinuer", "nativeContinuation")
}

func workspaceReadWrite(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if !c.Workspace.Write {
		t.Skip("the provider declares no workspace.write")
	}
	ctx := context.Background()
	w := ability[contract.WorkspaceWriter](t, env, "WorkspaceWriter", "workspace.write")
	if err := w.WriteFile(ctx, "providertest/hello.txt", "hello\n", ""); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if c.Workspace.Read {
		got, err := ability[contract.WorkspaceReader](t, env, "WorkspaceReader", "workspace.read").ReadFile(ctx, "providertest/hello.txt", "")
		if err != nil || got != "hello\n" {
			t.Errorf("ReadFile = %q, %v", got, err)
		}
	}
}

// workspaceExec (testkit L.1): exec "echo ok" returns an observed exit
// status 0 and the output.
func workspaceExec(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	if !envCaps(t, p, env).Workspace.Exec {
		t.Skip("the provider declares no workspace.exec")
	}
	x := ability[contract.CommandExecutor](t, env, "CommandExecutor", "workspace.exec")
	res, err := x.Exec(bounded(t), "echo ok", &contract.ExecRequest{})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if _, err := contract.Validate(contract.KindExecResult, contract.ExecResultSchema, res); err != nil {
		t.Errorf("the exec result is invalid: %v", err)
	}
	if res.ExitCode != 0 || res.Stdout != "ok\n" {
		t.Errorf("echo ok: exit %d, stdout %q; want 0 and %q", res.ExitCode, res.Stdout, "ok\n")
	}
}

// profileValidation: with profile.validation declared, the profile create
// accepts validates as ok, in the contract's result shape.
func profileValidation(t TB, p contract.Provider, opts Options) {
	c := caps(t, p)
	if !c.Profile.Validation {
		t.Skip("the provider declares no profile.validation")
	}
	v := ability[contract.ProfileValidator](t, p, "ProfileValidator", "profile.validation")
	in := opts.createInput("")
	res, err := v.ValidateProfile(bounded(t), in.Profile)
	if err != nil {
		t.Fatalf("ValidateProfile: %v", err)
	}
	if _, err := contract.Validate(contract.KindProfileValidation, contract.ProfileValidationSchema, res); err != nil {
		t.Errorf("the validation result is invalid: %v", err)
	}
	if !res.OK || res.HasErrors() {
		t.Errorf("the profile create accepts did not validate: %+v", res.Issues)
	}
}

// observation: with observation declared, Observe returns a valid,
// credential-free observation of this environment whose identity a second
// observation repeats.
func observation(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	if envCaps(t, p, env).Observation == nil {
		t.Skip("the provider declares no observation")
	}
	o := ability[contract.Observer](t, env, "Observer", "observation")
	ctx := bounded(t)
	first, err := o.Observe(ctx)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if _, err := contract.Validate(contract.KindEnvironmentObservation, contract.EnvironmentObservationSchema, first); err != nil {
		t.Errorf("the observation is invalid: %v", err)
	}
	if first.Subject.Provider != p.Name() || first.Subject.EnvironmentID != env.ID() {
		t.Errorf("the observation's subject %s/%s is not %s/%s", first.Subject.Provider, first.Subject.EnvironmentID, p.Name(), env.ID())
	}
	if err := contract.AssertObservationCredentialFree(first); err != nil {
		t.Errorf("the observation carries a credential: %v", err)
	}
	again, err := o.Observe(ctx)
	if err != nil {
		t.Fatalf("Observe again: %v", err)
	}
	if !contract.EnvironmentObservationIdentityMatches(first, again) {
		t.Error("a second observation names another environment identity")
	}
}

// legacyBranching: the legacy checkpoint and fork (no recovery semantics)
// work as declared: a checkpoint has an id, and a fork is a new
// environment that starts from the checkpoint's workspace.
func legacyBranching(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if !c.Branching.Checkpoint {
		t.Skip("the provider declares no branching.checkpoint")
	}
	ctx := bounded(t)
	w, writes := env.(contract.WorkspaceWriter)
	if writes && c.Workspace.Write {
		if err := w.WriteFile(ctx, "providertest/legacy.txt", "before\n", ""); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
	}
	cp, err := ability[contract.LegacyCheckpointer](t, env, "LegacyCheckpointer", "branching.checkpoint").Checkpoint(ctx, &contract.CheckpointRequest{Name: ptr("providertest")})
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if _, err := contract.Validate(contract.KindCheckpointRef, contract.CheckpointRefSchema, cp); err != nil {
		t.Fatalf("the checkpoint reference is invalid: %v", err)
	}
	if !c.Branching.Fork {
		return
	}
	fork, err := ability[contract.LegacyForker](t, env, "LegacyForker", "branching.fork").Fork(ctx, cp, &contract.ForkRequest{Name: ptr("providertest-fork")})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	t.Cleanup(func() { fork.Destroy(context.Background()) })
	if fork.ID() == env.ID() {
		t.Error("a fork is the source environment")
	}
	if r, ok := fork.(contract.WorkspaceReader); ok && writes && c.Workspace.Read {
		if got, err := r.ReadFile(ctx, "providertest/legacy.txt", ""); err != nil || got != "before\n" {
			t.Errorf("the fork's workspace lacks the checkpointed file: %q, %v", got, err)
		}
	}
}

func destroy(t TB, p contract.Provider, opts Options) {
	env, err := p.Create(context.Background(), opts.createInput(""))
	if err != nil && errors.Is(err, contract.ErrUnsupported) && exactOnly(t, p) {
		t.Skip("an exact-process-only provider: Create refuses agent environments")
	}
	if err != nil {
		t.Fatal(err)
	}
	// A file that exists before Destroy must not be readable after it.
	probe := "providertest-destroy.txt"
	w, writes := env.(contract.WorkspaceWriter)
	if writes {
		if err := w.WriteFile(context.Background(), probe, "x", ""); err != nil {
			t.Fatalf("WriteFile before Destroy: %v", err)
		}
	}
	if err := env.Destroy(context.Background()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if status, err := env.Status(context.Background()); err == nil && status == contract.EnvironmentRunning {
		t.Error("a destroyed environment still reports running")
	}
	if r, ok := env.(contract.WorkspaceReader); ok && writes {
		if _, err := r.ReadFile(context.Background(), probe, ""); err == nil {
			t.Error("a destroyed environment still serves workspace reads")
		}
	}
	if writes {
		if err := w.WriteFile(context.Background(), "after-destroy.txt", "x", ""); err == nil {
			t.Error("a destroyed environment still accepts workspace writes")
		}
	}
	afterDestroy := "after destroy"
	for _, err := range env.Stream(context.Background(), &contract.TurnInput{Prompt: &afterDestroy}) {
		if err == nil {
			t.Error("a destroyed environment still streams a turn")
		} else if !errors.Is(err, contract.ErrDestroyed) {
			t.Errorf("a turn on a destroyed environment failed with %v, which does not wrap contract.ErrDestroyed", err)
		}
		break
	}
	if g, ok := p.(contract.EnvironmentGetter); ok {
		if got, err := g.Get(context.Background(), env.ID()); err == nil && got != nil {
			if s, _ := got.Status(context.Background()); s == contract.EnvironmentRunning {
				t.Errorf("Get still finds destroyed environment %s running", env.ID())
			}
		}
	}
}

package coordmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// MCPServerName is the name the manager's harness knows the coordination
// server by: claude-code and codex call its tools
// mcp__agentrt__agent_runtime_coordination_<verb>.
const MCPServerName = "agentrt"

// DefaultSubmitGrace is how long the manager's turn may go on after its
// result was accepted before it is ended.
const DefaultSubmitGrace = 60 * time.Second

// SteersMember is the member of a coordination tool's result that
// carries the root steers (§3.6 "Steering": worker = the run id) waiting
// for the manager: an array of the steers' messages, oldest first. The
// harness shows a tool result's JSON text to its model, so the manager
// reads them with the result of its next coordination call.
const SteersMember = "steers"

// MaxResultSteerBytes bounds the steer text one tool result carries: the
// oldest waiting steers that fit (always at least one; a steer is at
// most 64 KiB), the rest with the next result.
const MaxResultSteerBytes = 64 << 10

// HarnessOptions configure NewHarnessBrain.
type HarnessOptions struct {
	// Store records the manager's run (kernel.Execute); nil keeps it in
	// memory.
	Store store.Store
	// Relay is the command (argv) the harness starts as its MCP server,
	// the run dir appended: a stdio relay to the live run. Nil means
	// this executable with "mcp coordination" (agentrt mcp coordination
	// RUN-DIR).
	Relay []string
	// SubmitGrace bounds the manager's turn after an accepted
	// submit_result (DefaultSubmitGrace when 0).
	SubmitGrace time.Duration
	// Logger receives the brain's and the endpoint's operational log;
	// nil discards it.
	Logger *slog.Logger
	// Version is announced by the endpoint.
	Version string
}

// HarnessBrain is the manager's brain for an external harness
// (claude-code, codex, opencode; spec/runtime.md §3.6 "an external
// harness drives the coordination verbs"): it serves the live run's
// coordination verbs (Serve), runs one turn of the manager's profile
// through a contract.Provider (providers/clibridge) with an MCP server
// entry that starts the stdio relay to them, and returns when the turn
// ends — the manager answered, called stop (the run cancels the turn),
// or its accepted submit_result's grace ran out.
//
// It reads the run's manager inbox (supervise.InboxReader): a root steer
// is handed to the harness with the result of its next coordination tool
// call (SteersMember), never by interrupting its model call, and is
// acknowledged delivered when that result is sent; a steer still waiting
// when the turn ends, or arriving after, is not_live.
//
// On a resumed run the harness's session is new and knows only its
// prompt, so the prompt then ends with a re-entry note (see
// MaxReentryNoteBytes) built from supervise.Coordinator.Reentry; a first
// start's prompt has none.
//
// Each turn is one attempt of the run's driver loop
// (supervise.Coordinator.DriveAttempts): a turn that failed is run again
// under Options.DriverRetry, and one that ended with the run's check
// unmet under Options.Reprompt, each in a new session whose prompt
// carries the re-entry note and why it is entered again. A harness that
// is not installed, or an environment variable refused, is a
// supervise.TerminalDriverError: another attempt would meet the same.
type HarnessBrain struct {
	manager  *profile.Profile
	provider contract.Provider
	granted  []string
	o        HarnessOptions
}

// ErrNestedHarness: a HarnessBrain was asked to drive a nested manager
// (supervise.Options.ManagerBrain). The run dir has one coordination
// endpoint, the root manager's, so an external harness drives only the
// root; a nested manager runs the router brain or a caller's Brain.
var ErrNestedHarness = errors.New("coordmcp: an external-harness brain drives a run's root manager only")

// NewHarnessBrain checks the manager profile and returns its brain on
// provider. The profile's harness must be claude-code, codex or
// opencode; it grants coordination verbs as tools (ToolPrefix + verb,
// at least one, every one a verb supervise serves); its other keys
// reach the harness unchanged. Errors match supervise.ErrInvalidOptions.
func NewHarnessBrain(manager *profile.Profile, provider contract.Provider, o HarnessOptions) (*HarnessBrain, error) {
	if manager == nil || provider == nil {
		return nil, fmt.Errorf("%w: a harness brain needs a manager profile and a provider", supervise.ErrInvalidOptions)
	}
	switch manager.Harness {
	case harness.ClaudeCode, harness.Codex, harness.OpenCode:
	default:
		return nil, fmt.Errorf("%w: harness %q has no external brain (claude-code, codex or opencode)", supervise.ErrInvalidOptions, manager.Harness)
	}
	b := &HarnessBrain{manager: manager, provider: provider, o: o}
	var bad []string
	for name, on := range manager.Tools {
		v, ok := strings.CutPrefix(name, supervise.ToolPrefix)
		switch {
		case !ok:
		case !slices.Contains(supervise.Verbs(), v):
			bad = append(bad, name)
		case on:
			b.granted = append(b.granted, name)
		}
	}
	slices.Sort(bad)
	slices.Sort(b.granted)
	switch {
	case len(bad) > 0:
		return nil, fmt.Errorf("%w: the manager profile declares coordination verbs supervise does not serve: %s", supervise.ErrInvalidOptions, strings.Join(bad, ", "))
	case len(b.granted) == 0:
		return nil, fmt.Errorf("%w: the manager profile grants no coordination verb (declare %s%s)", supervise.ErrInvalidOptions, supervise.ToolPrefix, supervise.VerbSpawnWorker)
	}
	if len(o.Relay) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("coordmcp: locating this executable for the relay: %w", err)
		}
		b.o.Relay = []string{exe, "mcp", "coordination"}
	}
	if b.o.SubmitGrace <= 0 {
		b.o.SubmitGrace = DefaultSubmitGrace
	}
	if b.o.Logger == nil {
		b.o.Logger = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// ReadsInbox reports true: the harness takes the steers addressed to the
// run's root with its coordination tools' results
// (Coordinator.ManagerInbox).
func (b *HarnessBrain) ReadsInbox() bool { return true }

// errSubmitGrace ends a manager's turn that went on after its result was
// accepted.
var errSubmitGrace = errors.New("coordmcp: the manager's result was accepted and its turn ran past the grace")

// errPoolSpent ends a manager's turn whose metered model calls spent the
// run's pool: nothing it could do next would be admitted, and its calls
// would only spend on.
var errPoolSpent = errors.New("coordmcp: the manager's model calls spent the run's budget")

// Drive serves the granted verbs, runs the manager's turn and stops
// serving when it ends.
func (b *HarnessBrain) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	if !c.IsRoot() {
		// Its verbs would be served at the run dir's one endpoint, which
		// is the root manager's.
		return supervise.BrainReport{}, fmt.Errorf("%w (%s)", ErrNestedHarness, c.Self())
	}
	all, err := c.Tools()
	if err != nil {
		return supervise.BrainReport{}, err
	}
	inbox := c.ManagerInbox()
	var accepted sync.Once
	submitted := make(chan struct{})
	var offered []contract.Tool
	for _, t := range all {
		if !slices.Contains(b.granted, t.Name) {
			continue
		}
		if t.Name == supervise.ToolPrefix+supervise.VerbSubmitResult {
			run := t.Run
			t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
				out, err := run(ctx, args)
				if a, ok := out.Get("accepted"); err == nil && ok && a.Kind() == canonjson.Bool && a.Bool() {
					accepted.Do(func() { close(submitted) })
				}
				return out, err
			}
		}
		if t.Name == supervise.ToolPrefix+supervise.VerbAwaitEvent {
			t.Run = wakeOnSteer(t.Run, inbox)
		}
		t.Run = withSteers(t.Run, inbox)
		offered = append(offered, t)
	}
	// The manager's own product tools (supervise
	// Options.ResolveSupervisorTools), served beside the verbs and
	// journaled call by call; a manager whose tools cannot be resolved
	// is not started.
	own, err := c.NodeTools(ctx, task)
	if err != nil {
		return supervise.BrainReport{}, err
	}
	offered = append(offered, own...)
	ownNames := make([]string, len(own))
	for i, t := range own {
		ownNames[i] = t.Name
	}
	srv, err := Serve(ctx, c, ServeOptions{Tools: offered, Logger: b.o.Logger, Version: b.o.Version})
	if err != nil {
		return supervise.BrainReport{}, err
	}
	defer srv.Close()
	p, err := b.mounted(c.RunDir())
	if err != nil {
		return supervise.BrainReport{}, err
	}
	st := b.o.Store
	if st == nil {
		st = memory.New(nil)
	}
	// Each attempt is one turn of the harness in a new session; the run
	// retries a failed one and re-prompts one that returned with the
	// check unmet, as Options.DriverRetry and Reprompt say
	// (supervise.Coordinator.DriveAttempts), over the same endpoint and
	// the same live workers.
	report, err := c.DriveAttempts(ctx, func(ctx context.Context, attempt int, r *supervise.DriverReentry) (supervise.BrainReport, error) {
		return b.turn(ctx, c, p, st, b.prompt(c, task, ownNames, r), submitted)
	})
	// The harness's last turn has ended: a steer it has not taken by now
	// never reaches its model, so it is not_live at once (Seal, not
	// TakeOrSeal: no later turn would read what a final take returned).
	inbox.Seal(context.WithoutCancel(ctx))
	return report, err
}

// turn runs one turn of the manager's profile p on the harness, with
// prompt, metered as it goes; submitted is closed once a result was
// accepted, after which the turn has SubmitGrace to end.
func (b *HarnessBrain) turn(ctx context.Context, c *supervise.Coordinator, p *profile.Profile, st store.Store, prompt string, submitted <-chan struct{}) (supervise.BrainReport, error) {
	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-submitted:
		case <-turnCtx.Done():
			return
		}
		t := time.NewTimer(b.o.SubmitGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(errSubmitGrace)
		case <-turnCtx.Done():
		}
	}()
	// The turn's spend is metered as the harness reports it: each model
	// call it reports while the turn runs (opencode's steps), then what
	// its final report adds. A process killed mid-turn keeps the calls
	// already journaled; the rest of the turn is a gap on resume.
	turn, err := c.OpenDriverTurn(ctx)
	if err != nil {
		return supervise.BrainReport{}, err
	}
	res, err := kernel.Execute(turnCtx, kernel.Request{Profile: p, Task: prompt, Provider: b.provider, Store: st,
		RunID: kernel.NewID("manager"), Kind: "supervise-manager", Observer: callMeter{turn: turn, stop: cancel, logger: b.o.Logger}})
	var report supervise.BrainReport
	var total *ledger.Usage
	if res != nil {
		report = supervise.BrainReport{Text: res.Text}
		total = &res.Usage
	}
	if endErr := turn.End(context.WithoutCancel(ctx), total); endErr != nil {
		b.o.Logger.Error("coordmcp: metering the manager's turn", "err", endErr)
	}
	if err != nil && errors.Is(context.Cause(turnCtx), errSubmitGrace) && ctx.Err() == nil {
		b.o.Logger.Info("coordmcp: ended the manager's turn after its accepted result", "grace", b.o.SubmitGrace)
		err = nil
	}
	if err != nil && errors.Is(context.Cause(turnCtx), errPoolSpent) && ctx.Err() == nil {
		b.o.Logger.Info("coordmcp: ended the manager's turn: its model calls spent the run's budget")
		err = fmt.Errorf("%w: %w: %w", supervise.ErrBudgetStop, errPoolSpent, err)
	}
	if errors.Is(err, clibridge.ErrBinaryNotFound) || errors.Is(err, clibridge.ErrEnvRefused) {
		// Another attempt would find the same installation.
		err = &supervise.TerminalDriverError{Err: err}
	}
	return report, err
}

// callMeter is the kernel.Observer of the manager's turn that meters
// each model call the harness reports while the turn runs
// (clibridge.CallUsage) through the turn's supervise.DriverTurn, and
// ends the turn (stop) once those calls spent the run's pool.
type callMeter struct {
	turn   *supervise.DriverTurn
	stop   context.CancelCauseFunc
	logger *slog.Logger
}

func (m callMeter) RunStarted(ctx context.Context, _ kernel.RunStart) (context.Context, error) {
	return ctx, nil
}

func (m callMeter) TurnStarted(ctx context.Context, _ kernel.TurnStart) (context.Context, error) {
	return ctx, nil
}

func (m callMeter) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	if u, ok := clibridge.CallUsage(e); ok {
		if err := m.turn.Meter(context.WithoutCancel(ctx), ledger.FromTokenUsage(&u)); err != nil {
			// The spend is charged; only its record is lost (the
			// journal counts the loss).
			m.logger.Error("coordmcp: metering the manager's model call", "err", err)
		}
		if m.turn.PoolSpent() {
			m.stop(errPoolSpent)
		}
	}
	return nil
}

func (m callMeter) TurnEnded(context.Context, kernel.TurnEnd) error { return nil }

func (m callMeter) RunEnded(context.Context, kernel.Result) error { return nil }

// withSteers wraps a coordination verb's run so that its result carries
// the root steers waiting in inbox (SteersMember, at most
// MaxResultSteerBytes of them). They are taken — acknowledged delivered —
// only for a result that is about to be sent: a successful object result
// (a refusal is sent as {error, reason}, which carries none) of a call
// whose caller is still there. A nil inbox leaves run as it is.
func withSteers(run func(context.Context, canonjson.Value) (canonjson.Value, error), inbox *supervise.Inbox) func(context.Context, canonjson.Value) (canonjson.Value, error) {
	if inbox == nil {
		return run
	}
	return func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		out, err := run(ctx, args)
		if err != nil || ctx.Err() != nil || out.Kind() != canonjson.Object {
			return out, err
		}
		if _, taken := out.Get(SteersMember); taken {
			return out, nil
		}
		steers := inbox.TakeAtMost(ctx, MaxResultSteerBytes)
		if len(steers) == 0 {
			return out, nil
		}
		msgs := make([]canonjson.Value, len(steers))
		for i, s := range steers {
			msgs[i] = canonjson.StringValue(s.Message)
		}
		return out.With(SteersMember, canonjson.ArrayValue(msgs)), nil
	}
}

// errSteerWaiting ends an await_event wait: a steer waits for the
// manager.
var errSteerWaiting = errors.New("coordmcp: a steer waits for the manager")

// wakeOnSteer wraps await_event's run so that a steer waiting in inbox
// ends the wait: the verb then answers at once with what it has (asked
// again with a 1 ms bound: an event, idle, or pending with the live
// workers), and withSteers hands the steer on with that result rather
// than when the wait runs out — up to supervise.MaxAwaitTimeout, as long
// as a steer itself waits. A nil inbox leaves run as it is.
func wakeOnSteer(run func(context.Context, canonjson.Value) (canonjson.Value, error), inbox *supervise.Inbox) func(context.Context, canonjson.Value) (canonjson.Value, error) {
	if inbox == nil {
		return run
	}
	return func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		waitCtx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		go func() {
			select {
			case <-inbox.Waiting():
				stop(errSteerWaiting)
			case <-waitCtx.Done():
			}
		}()
		out, err := run(waitCtx, args)
		if err == nil || ctx.Err() != nil || !errors.Is(context.Cause(waitCtx), errSteerWaiting) {
			return out, err
		}
		return run(ctx, args.With("timeoutMs", canonjson.NumberValue(1)))
	}
}

// mounted returns the manager profile as the harness runs it: the
// coordination verbs removed from its tools and served instead by the
// MCP server MCPServerName, a stdio relay to runDir's live run; for
// claude-code, whose dontAsk mode denies an unlisted tool, that server's
// tools allowed.
func (b *HarnessBrain) mounted(runDir string) (*profile.Profile, error) {
	p, err := profile.Clone(b.manager)
	if err != nil {
		return nil, fmt.Errorf("coordmcp: the manager profile: %w", err)
	}
	for name := range p.Tools {
		if strings.HasPrefix(name, supervise.ToolPrefix) {
			delete(p.Tools, name)
		}
	}
	if _, taken := p.MCP[MCPServerName]; taken {
		return nil, fmt.Errorf("%w: the manager profile already declares an MCP server %q", supervise.ErrInvalidOptions, MCPServerName)
	}
	pub := func(s string) profile.ConfigValue { return profile.ConfigValue{Kind: profile.ConfigPublic, Value: &s} }
	cmd := b.o.Relay[0]
	srv := profile.MCPServer{Command: &cmd}
	for _, a := range append(slices.Clone(b.o.Relay[1:]), runDir) {
		srv.Args = append(srv.Args, pub(a))
	}
	if p.MCP == nil {
		p.MCP = map[string]profile.MCPServer{}
	}
	p.MCP[MCPServerName] = srv
	if p.Harness == harness.ClaudeCode {
		if p.Tools == nil {
			p.Tools = map[string]bool{}
		}
		p.Tools["mcp__"+MCPServerName] = true
	}
	if len(p.Tools) == 0 {
		p.Tools = nil
	}
	return p, nil
}

// prompt is the manager's turn: the task, then how to work through the
// coordination tools (named explicitly, so the harness does not reach
// for its own sub-agent tool, which would bypass the journal, the pool
// and the check), the names of the manager's own product tools (own) the
// same server serves, and on a resumed run, or a turn the run enters
// again (r: a retry, a pause, a re-prompt), the re-entry note
// (reentryNote) and, for the latter, why (reentryReason).
func (b *HarnessBrain) prompt(c *supervise.Coordinator, task string, own []string, r *supervise.DriverReentry) string {
	var s strings.Builder
	s.WriteString(task)
	s.WriteString("\n\n---\nYou are the manager of supervised run ")
	s.WriteString(c.RunID())
	s.WriteString(". Delegate through the MCP server \"" + MCPServerName + "\"'s coordination tools only (")
	for i, g := range b.granted {
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(g)
	}
	s.WriteString("); never your own sub-agent or task tools. Start workers with spawn_worker")
	if names := c.WorkerProfiles(); len(names) > 0 {
		s.WriteString(" (worker profiles: " + strings.Join(names, ", ") + ")")
	}
	s.WriteString(", wait for them with await_event")
	if d := c.DeliverableDescription(); d != "" {
		s.WriteString("; what is delivered: " + d)
	}
	s.WriteString(". When a worker delivered, or you have the result, submit it with submit_result (if granted), or end with stop.\n")
	if len(own) > 0 {
		s.WriteString("The same server serves this run's own tools for you to call yourself: " + strings.Join(own, ", ") + ".\n")
	}
	s.WriteString("A coordination tool's result may carry \"" + SteersMember + "\": messages the run's operator sent you while you worked; follow them.\n")
	switch st := c.Reentry(); {
	case r != nil:
		// The run drives its manager again in a new session (a retry
		// after a failed turn, a pause, or a re-prompt): it is told
		// the run's state, and why it is entered again.
		s.WriteString(b.reentryNote(c.RunID(), st))
		s.WriteString(reentryReason(r))
	case st.Resumed:
		s.WriteString(b.reentryNote(c.RunID(), st))
	}
	return s.String()
}

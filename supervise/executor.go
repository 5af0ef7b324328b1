package supervise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// WorkerRunKind is the store run kind of a worker's kernel runs
// (KernelExecutor).
const WorkerRunKind = "supervise-worker"

// JudgedBy names, for the runs an executor makes of w, who decides their
// delivery: the supervised run's completion gate (kernel.Request.JudgedBy).
func (w Work) JudgedBy() string {
	return fmt.Sprintf("supervise run %s, node %s", w.RunID, w.Node)
}

// Work is one admitted worker, as an executor receives it.
type Work struct {
	// RunID is the supervised run's id; Node the worker's node id.
	RunID string
	Node  NodeID
	// Profile is the worker's resolved profile; Task its prompt.
	Profile *profile.Profile
	Task    string
	// Reserved is the ceiling reserved for the worker. The executor
	// should not spend past it; what it does spend is charged either way.
	Reserved ledger.Budget
	// Ask raises the worker's question to its manager and waits for the
	// decision (or ctx); an executor whose workers can ask passes it on.
	Ask func(ctx context.Context, q AskArgs) (Decision, error)
	// Acquiring and Running, for an executor that reports acquiring
	// (AcquisitionReporter), move the worker's node: Acquiring when it
	// starts acquiring the worker's environment (state acquiring: real
	// time spent getting a box, §3.6), Running once the worker runs in
	// it. Both are safe to call more than once and from any goroutine;
	// a move the node's state does not allow is ignored. Nil for other
	// executors, whose workers run from the start.
	Acquiring func()
	Running   func()
	// Observer, when set, watches the worker's run (Options.Observer's
	// NodeStarted made it); an executor running the worker through the
	// kernel passes it on as kernel.Request.Observer.
	Observer kernel.Observer
	// ResumeOf, on a continuity-resume spawn (§3.6 "Continuity"), is the
	// settled worker whose session this one continues: the latest settled
	// worker of its label under its parent. Only an executor reporting
	// ResumesSessions true is given such work; "" is a fresh worker.
	ResumeOf NodeID
	// ResumeSession is the provider session ResumeOf's worker left
	// (its WorkResult.Session, journaled with its settlement, so a run
	// resumed in another process still knows it); "" when none was
	// observed.
	ResumeSession string
	// ResumeRef is where ResumeOf's session can be continued from (its
	// WorkResult.SessionRef, journaled with its settlement): a process
	// that does not hold the environment looks it up by this. Nil when
	// unknown.
	ResumeRef *SessionRef
	// Inbox, for an executor that reads inboxes (InboxReader), holds the
	// steers sent to the worker while it runs: the executor takes them
	// between turns (Inbox.TakeOrSeal) as the next turn's input. Nil for
	// other executors.
	Inbox *Inbox
	// Bind, when set, journals the identity of the exact execution the
	// executor is about to start (KernelExecutor: its kernel run id),
	// before it starts it: a resumed run whose journal holds no
	// settlement for the worker then recovers that execution (an
	// executor that is a Recoverer) instead of leaving the worker in
	// doubt. An error means the identity is not durable (or not valid,
	// ErrInvalidExecution): the executor must start nothing and return.
	Bind func(ctx context.Context, execution string) error
	// PeerMail, when Options.PeerMail is set, are send_mail and
	// read_mail bound to this worker (the sender is always Node): an
	// executor whose workers run a tool loop offers them beside its own
	// tools. Nil when peer mail is off.
	PeerMail []contract.Tool
}

// WorkResult is what a worker produced and what it spent. Spent is
// reported even when the work failed: a failed worker's spend is still
// charged. A nil quantity is unknown and is charged at the worker's
// ceiling.
type WorkResult struct {
	Text   string
	Output canonjson.Value
	Spent  ledger.Spend
	// ServedModel is the model the platform reported serving ("" when
	// unknown).
	ServedModel string
	// Usage, when the executor knows it, is the worker's usage channel
	// by channel (Spent folds it); nil: unknown. Only observers read it.
	Usage *ledger.Usage
	// Session is the provider's own session id the worker's last turn
	// observed (NSO-02), "" when none: journaled with the settlement
	// (Record.Session) and handed to a continuity-resume spawn of the
	// worker as Work.ResumeSession. An id longer than MaxSessionIDLen is
	// not kept.
	Session string
	// SessionRef, from an executor that keeps the worker's environment
	// for a continuity-resume spawn (KernelExecutor when it
	// ResumesSessions), is where the session can be continued from:
	// journaled with the settlement (Record.SessionRef) and handed to the
	// resume spawn as Work.ResumeRef. Nil when none; one out of the
	// contract's bounds is not kept.
	SessionRef *SessionRef
	// TeardownUnconfirmed, when not empty, says why the executor could
	// not confirm the worker's environment was torn down (a destroy that
	// failed or timed out). The worker's outcome stands; it is named in
	// SupervisedResult.TeardownUnconfirmed, journaled, and its slot
	// stays charged (§15 behaviour 51).
	TeardownUnconfirmed string
	// Teardowns are the environments the executor released when the
	// worker settled (destroyed, or tried to): each is journaled as one
	// environment-teardown record (§3.6 "Teardown & retained
	// environments"). One it could not confirm destroyed is also named
	// in TeardownUnconfirmed. At most MaxTeardowns are journaled.
	Teardowns []EnvironmentTeardown
}

// MaxSessionIDLen bounds a journaled provider session id
// (WorkResult.Session); a longer one is recorded as unknown.
const MaxSessionIDLen = 512

// Executor runs workers (the executor port of §3.6). It is an open
// interface: any leaf runtime (a provider through the kernel, a CLI
// bridge, a remote sidecar) can run a worker. Execute returns the
// worker's result, or an error when the work failed or was cancelled;
// the result's Spent counts in both cases. Execute must return once ctx
// ends.
type Executor interface {
	Execute(ctx context.Context, w Work) (WorkResult, error)
}

// UsageReporter is implemented by an executor that knows whether it can
// report its workers' usage. An executor reporting false is refused
// before any spawn unless Options.BudgetExempt is set (§3.6 "A
// budgetExempt executor … is refused by the Scope before execute").
type UsageReporter interface {
	ReportsUsage() bool
}

// Runtimes an Executor of this module names (RuntimeNamer): where its
// workers run. NodeInfo.Runtime and the node spans carry it.
const (
	// RuntimeProvider: through the kernel on a contract.Provider
	// (KernelExecutor).
	RuntimeProvider = "provider"
	// RuntimeAnalyst: an analyst's tool loop in this process.
	RuntimeAnalyst = "analyst"
)

// RuntimeNamer is implemented by an executor that names where its
// workers run (a RuntimeXxx constant, or "fleet" for package fleet's).
// An executor that does not implement it runs workers on an unknown
// runtime, and NodeInfo.Runtime stays "".
type RuntimeNamer interface {
	Runtime() string
}

// RuntimeOf is the runtime exec names, "" when it names none.
func RuntimeOf(exec Executor) string {
	if r, ok := exec.(RuntimeNamer); ok {
		return r.Runtime()
	}
	return ""
}

// TracePropagator is implemented by an executor that says whether its
// workers continue the trace of their node (spec runtime §10: the
// worker's trace context travels as TRACEPARENT or an equivalent
// channel). When a run is observed (Options.Observer) and its executor
// does not report true, the run journals a KindTraceUnpropagated record
// for each worker it starts: the worker's spans, if any, are not the
// node span's children.
type TracePropagator interface {
	PropagatesTrace() bool
}

// KindTraceUnpropagated is the journal record of a worker whose executor
// could not carry its node's trace context to it (Record.Node the
// worker, Record.Reason why); written once per node, only for an
// observed run.
const KindTraceUnpropagated = "trace-unpropagated"

// traceGap says why exec cannot be trusted to carry a worker's trace
// context, "" when it reports it does.
func traceGap(exec Executor) string {
	p, ok := exec.(TracePropagator)
	switch {
	case !ok:
		return "the executor does not say it carries the trace context (supervise.TracePropagator)"
	case !p.PropagatesTrace():
		return "the executor has no channel for the trace context"
	}
	return ""
}

// InfraError marks an executor's failure as its infrastructure's (the
// backend, the transport, the process) rather than the worker's own
// outcome. Executors wrap such failures in it; IsInfra reads it.
type InfraError struct {
	Err error
}

// Error returns the wrapped error's message.
func (e *InfraError) Error() string {
	if e == nil || e.Err == nil {
		return "supervise: infrastructure failure"
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *InfraError) Unwrap() error { return e.Err }

// IsInfra reports whether a worker's executor error is an
// infrastructure failure: an *InfraError in its chain, or a kernel run
// that broke on its transport, ended without a terminal event, could not
// get its environment, lost its lease, lost its store or panicked. A refusal, a failure
// the provider reported in band, a cancellation and a timeout are not:
// they are the work's own outcome or its caller's decision.
func IsInfra(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*InfraError](err); ok {
		return true
	}
	if re, ok := errors.AsType[*kernel.RunError](err); ok {
		switch re.Reason {
		case kernel.ReasonTransport, kernel.ReasonNoTerminal, kernel.ReasonProvider, kernel.ReasonLeaseLost, kernel.ReasonPanic, kernel.ReasonStoreFailed:
			return true
		}
	}
	return false
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, w Work) (WorkResult, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, w Work) (WorkResult, error) { return f(ctx, w) }

// DefaultMaxSteerTurns is how many turns steers may add to one worker
// when KernelExecutor.MaxSteerTurns is 0.
const DefaultMaxSteerTurns = 8

// KernelExecutor runs each worker as exact runs (kernel.Execute) of its
// profile on Provider, recorded in Store: the task's turn, then one turn
// per batch of steers its inbox held when the turn before ended, all in
// one environment (kernel.KeepEnvironment), so the worker keeps its
// session. A steer is acknowledged delivered when such a turn takes it.
// Usage the provider does not report stays unknown; a worker counts one
// iteration however many turns steers gave it. A question interaction
// of a turn is the worker's question to its manager (Work.Ask), answered
// with the decision; the worker is acquiring while the provider creates
// its environment; and an environment it could not destroy is the
// result's TeardownUnconfirmed.
//
// On a provider that declares native continuation (ResumesSessions), a
// settled worker's environment is kept instead of destroyed while a
// continuity-resume spawn may follow (WorkResult.SessionRef names it),
// and released at run end (ReleaseSessions); a resume worker continues
// that session natively (kernel.Request.Continue), or is refused with a
// *ResumeRefusedError having spent nothing.
type KernelExecutor struct {
	Provider contract.Provider
	Store    store.Store
	// MaxSteerTurns bounds the turns steers add to one worker: 0 means
	// DefaultMaxSteerTurns, a negative value none (the worker's inbox is
	// sealed after its first turn and steers are refused not_live).
	MaxSteerTurns int
	// Logger receives what Execute reports besides its result (a worker
	// environment it could not destroy, also named in the result's
	// TeardownUnconfirmed; a question it could not answer); nil
	// discards.
	Logger *slog.Logger
	// Accounts, when set, runs every worker whose profile has seats
	// through its seat chain (kernel.ExecuteSeated): Accounts resolves
	// each stage's provider, Provider serves only unseated profiles. A
	// quota refusal moves the worker to its next stage under the same
	// node (RG-11). Without it a seated profile runs its first stage's
	// projection on Provider, as kernel.Execute does.
	Accounts kernel.AccountManager
	// PeerMailMount, when set, serves a worker's peer mail tools
	// (Work.PeerMail, Options.PeerMail) where its harness can reach them
	// and returns the MCP server Execute mounts in the worker's profile
	// as PeerMailAlias, and a release Execute calls once the worker
	// ended (coordmcp.MountPeerMail: a loopback endpoint of its own per
	// worker). The provider must mount MCP servers, or it refuses the
	// profile; a profile that already declares PeerMailAlias is refused.
	// Nil: a provider's worker is given no peer mail (it cannot call Go
	// tools).
	PeerMailMount func(ctx context.Context, w Work) (profile.MCPServer, func(), error)

	// keep is the executor's continuity-resume state (ResumesSessions,
	// ReleaseSessions). A KernelExecutor is not copied once used.
	keep sessionKeep
}

// ReportsUsage reports true: the kernel reads the provider's usage
// events, and what they leave out stays unknown rather than zero.
func (e *KernelExecutor) ReportsUsage() bool { return true }

// ReadsInbox reports true: the worker's turns take its steers.
func (e *KernelExecutor) ReadsInbox() bool { return true }

// Runtime reports RuntimeProvider.
func (e *KernelExecutor) Runtime() string { return RuntimeProvider }

// AcquiresEnvironment reports true: the worker is acquiring while its
// provider creates its environment.
func (e *KernelExecutor) AcquiresEnvironment() bool { return true }

// PropagatesTrace reports true: the worker's kernel run is traced under
// ctx, its node's span, and the provider passes the trace context on to
// what it starts (TRACEPARENT to a harness process).
func (e *KernelExecutor) PropagatesTrace() bool { return true }

// Execute runs w through kernel.Execute, turn after turn while its inbox
// holds steers (see KernelExecutor).
func (e *KernelExecutor) Execute(ctx context.Context, w Work) (WorkResult, error) {
	if e != nil && e.PeerMailMount != nil && len(w.PeerMail) > 0 {
		p, release, err := mountPeerMail(ctx, w, e.PeerMailMount)
		if err != nil {
			return WorkResult{}, err
		}
		defer release()
		w.Profile = p
	}
	if w.ResumeOf != "" {
		// Before the seat chain: a resume continues a session or is
		// refused, never runs fresh.
		return e.resume(ctx, w, e.maxSteer())
	}
	if e != nil && e.Accounts != nil && e.Store != nil && w.Profile != nil && len(w.Profile.Seats) > 0 {
		return e.executeSeated(ctx, w)
	}
	if e == nil || e.Provider == nil || e.Store == nil {
		return WorkResult{}, errors.New("supervise: KernelExecutor needs a Provider and a Store")
	}
	maxSteer := e.maxSteer()
	// The worker's questions (question interactions of its turns) go
	// to its manager, and its environment's creation is its acquiring.
	asking := newAskWorker(ctx, w, e.Logger)
	defer asking.close()
	w.Observer = asking.observer(w.Observer)
	// The environment is kept — for the turns steers add, and so that
	// its destruction is this executor's to confirm.
	kept := kernel.KeepEnvironment(asking.provider(e.Provider))
	out, err := e.runTurns(ctx, w, maxSteer, e.freshTurns(w, kept))
	// While a continuity-resume spawn may follow, the environment is kept
	// (released at run end, ReleaseSessions).
	asking.mu.Lock()
	raw := asking.envs[kept.EnvironmentID()]
	asking.mu.Unlock()
	created := raw != nil && raw.Creation() == contract.CreationCreated
	k := &keptSession{keeper: kept, env: raw, ref: SessionRef{EnvironmentCreated: created}}
	if e.keepSettled(ctx, w, k, out.Session, &out) {
		return out, err
	}
	// Released at settlement: the runs settled and nothing the worker
	// produced depends on the environment, so an unconfirmed teardown
	// leaves the outcome standing.
	e.releaseInto(ctx, w, k, &out)
	return out, err
}

// providerName names the provider an environment of e's was on; "" when
// e has none.
func (e *KernelExecutor) providerName() string {
	if e == nil || e.Provider == nil {
		return ""
	}
	return e.Provider.Name()
}

// joinDetail joins two reasons a teardown is unconfirmed.
func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// maxSteer is MaxSteerTurns with its default.
func (e *KernelExecutor) maxSteer() int {
	if e == nil || e.MaxSteerTurns == 0 {
		return DefaultMaxSteerTurns
	}
	return e.MaxSteerTurns
}

// turnPlan is what differs between the ways a worker's turns run
// (runTurns): on a provider's kept environment (freshTurns), or as
// native continuations of a settled worker's session (continueTurns).
type turnPlan struct {
	// request is the kernel request of turn run id on task.
	request func(id, task string) kernel.Request
	// refused maps the first turn's error to the worker's when the turn
	// was refused before anything was sent ("" spend); nil, or a nil
	// result, keeps the turn's error as it is.
	refused func(err error) error
	// session is the worker's session when a turn reports none.
	session string
	// next readies the turn after one that ended and returns what
	// commits it once steers are taken; ok false ends the worker. Nil:
	// every next turn is ready.
	next func(ctx context.Context) (commit func(), ok bool)
}

// freshTurns is the plan of w's turns on provider (the kept
// environment).
func (e *KernelExecutor) freshTurns(w Work, provider contract.Provider) turnPlan {
	return turnPlan{request: func(id, task string) kernel.Request {
		return kernel.Request{Profile: w.Profile, Task: task, Provider: provider, Store: e.Store,
			RunID: id, Kind: WorkerRunKind, JudgedBy: w.JudgedBy(), Observer: w.Observer}
	}}
}

// runTurns runs w's turns as p plans them: the task's, then one per
// batch of steers its inbox held when the turn before ended, at most
// maxSteer of them.
func (e *KernelExecutor) runTurns(ctx context.Context, w Work, maxSteer int, p turnPlan) (WorkResult, error) {
	runID := kernel.NewID("worker")
	if w.Bind != nil {
		// The run id is journaled before the run exists, so a process
		// that dies mid-run leaves it recoverable (Recover).
		if err := w.Bind(ctx, runID); err != nil {
			w.Inbox.Seal(ctx)
			return WorkResult{Spent: zeroSpend()}, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
		}
	}
	task := w.Task
	var (
		usage ledger.Usage
		out   WorkResult
		// teardown is why an environment a turn's kernel run destroyed
		// could not be confirmed destroyed (kernel
		// Result.TeardownUnconfirmed), over every turn.
		teardown string
	)
	for turn := 0; ; turn++ {
		id := runID
		if turn > 0 {
			id = fmt.Sprintf("%s.%d", runID, turn)
		}
		res, err := kernel.Execute(ctx, p.request(id, task))
		if turn == 0 && err != nil && p.refused != nil {
			if rerr := p.refused(err); rerr != nil {
				w.Inbox.Seal(ctx)
				return WorkResult{Spent: zeroSpend()}, rerr
			}
		}
		if turn == 0 && err != nil && refusedUnadmitted(err) {
			// The provider refused the run before it admitted anything
			// (the kernel's own rule: it records the run's usage as zero):
			// nothing ran, nothing was spent — not even an iteration —
			// so a pre-spawn refusal may be retried (Options.WorkerRetry).
			w.Inbox.Seal(ctx)
			return WorkResult{Spent: zeroSpend()}, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
		}
		if res == nil {
			if err == nil {
				err = errors.New("supervise: the kernel returned no result")
			}
			w.Inbox.Seal(ctx)
			if turn == 0 {
				// Refused before dispatch: nothing ran, nothing was spent.
				return WorkResult{Spent: zeroSpend()}, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
			}
			return out, fmt.Errorf("supervise: worker %s, turn %d: %w", w.Node, turn+1, err)
		}
		if turn == 0 {
			usage = res.Usage
		} else {
			usage = usage.Plus(res.Usage)
		}
		u := usage
		teardown = joinDetail(teardown, res.TeardownUnconfirmed)
		out = WorkResult{Text: res.Text, Output: res.Output, Spent: SpendOf(usage), ServedModel: res.Served.Model, Usage: &u,
			Session: cmp.Or(res.NativeSessionID, p.session), TeardownUnconfirmed: teardown}
		if err != nil {
			w.Inbox.Seal(ctx)
			return out, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
		}
		if turn >= maxSteer || ctx.Err() != nil {
			w.Inbox.Seal(ctx)
			return out, nil
		}
		commit := func() {}
		if p.next != nil {
			c, ok := p.next(ctx)
			if !ok {
				w.Inbox.Seal(ctx)
				return out, nil
			}
			commit = c
		}
		steers := w.Inbox.TakeOrSeal(ctx)
		if len(steers) == 0 {
			return out, nil
		}
		commit()
		task = steerInput(steers)
	}
}

// refusedUnadmitted reports whether err is a provider's quota refusal
// issued before it admitted anything (contract.QuotaRefusalError without
// a Run), which the kernel records as a run that spent nothing.
func refusedUnadmitted(err error) bool {
	q, ok := errors.AsType[*contract.QuotaRefusalError](err)
	return ok && q.Run == nil
}

// steerInput is the turn input of the steers a worker's turn takes: each
// message, in order, separated by a blank line.
func steerInput(steers []SteerMessage) string {
	if len(steers) == 1 {
		return steers[0].Message
	}
	parts := make([]string, len(steers))
	for i, s := range steers {
		parts[i] = s.Message
	}
	return strings.Join(parts, "\n\n")
}

// SpendOf converts observed usage to a ledger spend of one iteration:
// tokens are input plus output when both are known (when only a floor
// is, TokensFloor is what was reported), dollars when the
// cost is known (rounded up to the micro-dollar) and at most
// ledger.MaxQuantity micro-dollars; anything unknown stays nil.
func SpendOf(u ledger.Usage) ledger.Spend {
	one := int64(1)
	s := ledger.Spend{Iterations: &one}
	if u.InputTokens.Known() && u.OutputTokens.Known() {
		t := u.InputTokens.Value + u.OutputTokens.Value
		s.Tokens = &t
	} else if u.InputTokens.Reported || u.OutputTokens.Reported {
		// An incomplete receipt: what it reported is a floor.
		f := max(u.InputTokens.Value, 0) + max(u.OutputTokens.Value, 0)
		s.TokensFloor = &f
	}
	// Dollars past ledger.MaxQuantity micro-dollars (a router's receipt
	// of 1e13 dollars, or a huge exponent) are no known spend: converted,
	// they would overflow int64 into a negative amount, or be a known
	// total the pool itself refuses as invalid.
	if u.CostUSD.Known() {
		if micro, ok := ledger.SpentMicroUSD(u.CostUSD.Value); ok {
			s.MicroUSD = &micro
		}
	}
	return s
}

// ErrPeerMailMount wraps why a worker's peer mail could not be mounted
// (KernelExecutor.PeerMailMount); the worker fails with it, having run
// nothing.
var ErrPeerMailMount = errors.New("supervise: mounting the worker's peer mail")

// mountPeerMail returns w's profile with its peer mail served by mount
// as the MCP server PeerMailAlias (a copy: w.Profile is not changed),
// and the release of that server.
func mountPeerMail(ctx context.Context, w Work, mount func(context.Context, Work) (profile.MCPServer, func(), error)) (*profile.Profile, func(), error) {
	if w.Profile == nil {
		return nil, nil, fmt.Errorf("%w: the worker has no profile", ErrPeerMailMount)
	}
	if _, taken := w.Profile.MCP[PeerMailAlias]; taken {
		return nil, nil, fmt.Errorf("%w: the profile already declares an MCP server %q", ErrPeerMailMount, PeerMailAlias)
	}
	p, err := profile.Clone(w.Profile)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPeerMailMount, err)
	}
	srv, release, err := mount(ctx, w)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPeerMailMount, err)
	}
	if release == nil {
		release = func() {}
	}
	if p.MCP == nil {
		p.MCP = map[string]profile.MCPServer{}
	}
	p.MCP[PeerMailAlias] = srv
	if p.Harness == harness.ClaudeCode {
		// Its dontAsk mode denies a tool its profile does not list.
		if p.Tools == nil {
			p.Tools = map[string]bool{}
		}
		p.Tools["mcp__"+PeerMailAlias] = true
	}
	return p, release, nil
}

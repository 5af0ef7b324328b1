package supervise

import (
	"context"
	"errors"
	"fmt"
	"go/token"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// Output is a result offered to the deliverable check: a worker's, or
// the manager's own submit_result (Node is then the root).
type Output struct {
	Node  NodeID
	Text  string
	Value canonjson.Value
}

// Deliverable is the caller's independent completion check (§3.6
// "Completion gate"). A result is delivered only when Check returned a
// verdict that passed and no error; an error or a panic is "not
// delivered", never a crash. Describe tells a manager whose submission
// failed what is expected.
type Deliverable struct {
	Check    func(ctx context.Context, out Output) (kernel.Verdict, error)
	Describe string
	// Timeout bounds one Check (DefaultCheckTimeout when 0): a check
	// that has not answered by then did not pass, and its output is not
	// delivered. A check should return when its ctx ends; one that does
	// not is abandoned, never waited for.
	Timeout time.Duration
	// Identity names the check's rule — text that changes whenever what
	// passes does (agentrt supervise gives its --expect, --check-cmd and
	// --check-timeout). Its digest is journaled with the run's start,
	// and a resume given another Identity is refused
	// (ResumeMismatchError, Field "Deliverable"): the results the run
	// judged before the restart were judged by the first rule, and a run
	// whose rule changed halfway delivers by neither. Empty: the check is
	// not identified, and a resume does not compare it.
	Identity string
}

// identityDigest is the journaled digest of a Deliverable's Identity;
// "" when it has none.
func (d Deliverable) identityDigest() string {
	if d.Identity == "" {
		return ""
	}
	return canonjson.DigestBytes([]byte(d.Identity))
}

// DefaultCheckTimeout bounds a deliverable check whose Deliverable sets
// no Timeout.
const DefaultCheckTimeout = 2 * time.Minute

// Brain drives a supervised run through its Coordinator and returns when
// it is done (it answered, called Stop, or failed). Metered is the
// brain's own model usage it did not already charge turn by turn through
// Coordinator.Meter, charged to the run's pool at its end; nil means
// none.
//
// The router brain (harness cli-base) is built in. A caller-owned brain
// is any implementation. An external harness (claude-code, codex,
// opencode) is a Brain that serves Coordinator.Tools over MCP to the
// harness's process and waits for it: coordmcp.HarnessBrain.
type Brain interface {
	Drive(ctx context.Context, c *Coordinator, task string) (BrainReport, error)
}

// ExtraToolsOfferer is a Brain that offers the root manager's
// Options.ExtraTools itself: one that drives the root through
// RouterBrain.DriveTools (which offers them), or hands
// Coordinator.ExtraTools to a brain of its own. Supervise accepts
// ExtraTools with the router brain or such a brain only (a layer over
// supervise, as package graph's root brain is); OffersExtraTools marks
// it and is not called.
type ExtraToolsOfferer interface {
	Brain
	OffersExtraTools()
}

// BrainReport is what a brain says of its own work.
type BrainReport struct {
	Text    string
	Metered *ledger.Usage
}

// Options configure Supervise. Budget, Deliverable, Profiles and a way to
// run workers (Executor, or Workers for the default kernel executor) are
// required; a cli-base manager also needs Router.
type Options struct {
	// Budget is the run's conserved pool; a new run needs token and
	// iteration ceilings. A resume runs with the budget its journal
	// holds: a channel left nil is adopted from it, one given must equal
	// it (else a *ResumeMismatchError), so a zero Budget resumes with
	// the journaled one. PerWorker is held to its journaled value the
	// same way, and so are the task (empty: adopted) and the manager
	// profile's digest. Deadline, when set, is its absolute deadline,
	// read on Now's clock; on resume the journaled deadline holds (the
	// run has what is left of it, and a run resumed after it ends at
	// once, budget-exhausted, with nothing more driven or spent).
	Budget   ledger.Budget
	Deadline time.Time
	// PerWorker, MaxLiveWorkers, MaxDepth, AllowedModels and
	// AuthorizeSpawn configure the Scope (see ScopeOptions).
	// AllowedModels holds every model a worker's profile names, its
	// model.default and the ones it hides (model.small, a seat, a
	// subagent, a mode): a spawn naming one outside is refused
	// invalid-identity (model-not-allowed). The manager's own profile is
	// not held to it. AuthorizeSpawn refusing, panicking or not
	// answering within DefaultAuthorizeSpawnTimeout refuses the spawn
	// preflight-refused, cause not-authorized; so does a hook still
	// deciding when the spawning manager's context ends (the run was
	// cancelled, stopped or ran out of time), at once.
	PerWorker      ledger.Budget
	MaxLiveWorkers int
	MaxDepth       int
	AllowedModels  []string
	AuthorizeSpawn func(SpawnRequest) error
	// AuthorizeMessage, when set, is the product's authority over every
	// message sent down to a live worker (§3.6 authorizeMessage): a
	// manager's steer_agent, a root steer, a cross-process steer
	// (WriteWorkerSteer, agentrt steer), a finding a graph routes into
	// a worker, and an answer_question answer. It returns the
	// instruction to deliver, possibly narrowed, or an error refusing
	// it (so does an empty instruction): a refused steer is acknowledged refused with the reason
	// ("not authorized: ..."), which steer_agent's result carries, and
	// a refused answer is answer_question's refusal
	// (message-not-authorized); neither is delivered. A hook that
	// panics, or does not answer within DefaultAuthorizeMessageTimeout,
	// refuses. The steer's request is journaled as proposed; a steer
	// an earlier process accepted and a resumed run re-offers to its
	// manager is authorized again.
	AuthorizeMessage func(ctx context.Context, m DownMessage) (string, error)
	// EscalateQuestion, when set, is where a question leaves the run's
	// root manager (§3.6 escalateQuestion): its ask_parent, and its
	// answer_question escalateTo parent. It answers delivered, naming who
	// holds the question now (the verb replies queued-for-parent), or
	// not, with a reason (no-parent: the manager is told it is the last
	// decider and must not wait). An error, a panic, or no answer within
	// DefaultEscalateQuestionTimeout is not delivered, the error's text
	// the reason. Unset, every such question reaches no parent: there is
	// no default operator queue. Nested managers do not call it: a
	// nested manager's parent is its parent manager, and the question
	// chain ends at the root, which calls it. Every escalation is
	// journaled record-only (CoordEscalation); a resumed manager running
	// again the call that made one gets its outcome back, and the hook
	// is not called again (a process that ends between the hook's answer
	// and its record leaves no outcome: the call run again calls it
	// again, so a hook may see one question twice). The answer to a delivered question reaches
	// the manager as a steer to the root (WriteWorkerSteer, agentrt
	// supervise steer); a worker's question it escalated stays open (and
	// holds stop when blocking) until the manager answers it.
	EscalateQuestion func(ctx context.Context, q Question) (EscalationOutcome, error)
	// WatchWorkers, when set, runs an online detector panel over each
	// spawned worker's live tool calls (§3.6 watchWorkers; see
	// WatchWorkers): a detection is raised as a finding (Event kind
	// EventFinding, Lens OnlineLensPrefix+the detector's kind, WorkerID
	// and Source the worker, Output the OnlineFinding as JSON) that the
	// worker's manager's await_event returns while the worker still
	// runs, at most MaxFindingsPerWorker per worker. Each is journaled
	// in the coordination log first (FindingDetected); a resumed run
	// raises none again. Nil: no worker is watched.
	WatchWorkers *WatchWorkers
	// Profiles are the worker profiles spawn_worker may name, by name.
	Profiles map[string]*profile.Profile
	// AuthoredProfiles lets spawn_worker take an authored AgentProfile
	// object as its profile (§3.6 "the authored profile → the profile
	// that will run"). Off by default: an object is refused. An authored
	// profile is validated strictly, its model is held to AllowedModels,
	// and one that runs commands (local MCP servers, hooks) or declares
	// connections is refused unless AuthorizeSpawn is set, which then
	// decides, seeing SpawnRequest.Authored.
	AuthoredProfiles bool
	// Deliverable decides delivery.
	Deliverable Deliverable
	// Executor runs workers. When nil, a KernelExecutor runs them on
	// Workers (recorded in an in-memory store).
	Executor Executor
	Workers  contract.Provider
	// BudgetExempt admits an executor that reports it cannot report
	// usage (UsageReporter); its workers are charged at their ceilings.
	BudgetExempt bool
	// Brain drives the run. When nil, the manager profile's harness
	// chooses: cli-base (or none) runs the router brain on Router.
	Brain  Brain
	Router contract.ChatModel
	// MaxTurns caps the router brain's tool turns (0: the kernel's
	// default backstop), a nested manager's too; a negative cap is
	// refused as an invalid option (/maxTurns).
	MaxTurns int
	// ManagerBrain, when set, chooses the brain of a worker whose
	// profile declares coordination verbs (ToolPrefix + verb): such a
	// worker is a nested manager, whose verbs spawn, await, observe,
	// steer and answer its own children (ids "<node>:s<seq>", held to
	// MaxDepth, reserved from a pool carved from its own reservation,
	// which bounds its whole subtree, counted against MaxLiveWorkers
	// tree-wide) and whose ask_parent goes to its parent
	// manager. A nil Brain, or no ManagerBrain, gives a cli-base (or
	// harness-less) manager profile the RouterBrain on Router; a
	// manager profile no brain serves is refused at spawn
	// (preflight-refused, cause manager-brain).
	ManagerBrain func(p *profile.Profile) Brain
	// RunDir, when set, holds the run's journal and result blobs; RunID
	// names the run (generated when empty on a new run). Resume continues
	// the run the journal in RunDir holds; without it an existing journal
	// is refused (*RunExistsError).
	RunDir string
	RunID  string
	Resume bool
	// ReturnEnded, with Resume, makes a resume of a run whose journal
	// already holds its finished record return that record's result
	// without driving the brain or running a worker (a process killed
	// after its run ended is resumed to the same result, not re-run).
	// A finished record of a run its caller's context cancelled
	// (CancelSourceContext) is an interruption, not an end: that run is
	// driven on. Without ReturnEnded every resumed run is driven again
	// over its replayed journal, as the reference resumes (its drivers
	// are replay-safe).
	ReturnEnded bool
	// WorkspaceRoot, when set and RunDir is empty, puts the run dir at
	// the layout's default place, RunDirIn(WorkspaceRoot, RunID):
	// <root>/.agent/supervisor/<runId> (§3.6 "Supervisor run layout"),
	// where other processes (agentrt steer, cancel, top) find it by the
	// run's id. RunID must then be letters, digits, '.', '_', ':' and
	// '-' (generated when empty on a new run; ':' is escaped in the
	// directory's name, RunDirStem), and Resume needs it.
	WorkspaceRoot string
	// SpawnStore, when set, keeps the spawn journal as run RunID in this
	// store (SQLite or PostgreSQL for many processes; see
	// OpenStoreSpawnLog) instead of the run dir's file: the store's lease
	// generation, not the file lock, makes this process its one writer,
	// and a process that lost the lease writes nothing more. Resume then
	// needs RunID. The run dir, when also set, keeps the blobs, the
	// coordination log and the control files.
	SpawnStore store.Store
	// SpawnLeaseTTL is how long a SpawnStore journal stays this
	// process's once it stops renewing it (a process that died): 0
	// means kernel.DefaultLeaseTTL, below kernel.MinLeaseTTL is refused.
	// Until it lapses, another process resuming the run is refused
	// (ErrSpawnLogHeld).
	SpawnLeaseTTL time.Duration
	// Store, when set, records the run there once it ended (not when its
	// caller's context interrupted it): a KindSupervise run with id
	// RunID whose document is the RunRecord (the spawn journal's run
	// holds it instead, RunRecordMember, when the journal is in this
	// store). Give it the store the workers' kernel runs are recorded in
	// (KernelExecutor.Store), whose records name this run as the judge of
	// their delivery, so that the store's runs reconcile with the result.
	// A record that cannot be written is ErrRunNotRecorded beside the
	// result.
	Store store.Store
	// Held, when set, vouches that the caller still holds the run it
	// drives under a lease of its own (a delegation queue's claim): it
	// is asked before every write to the run's journals and files, and
	// an error (which should match contract.ErrLeaseLost) makes the run
	// no longer this process's, as a caller context ending with such a
	// cause does: nothing more is written, the run returns
	// ErrSpawnLogLost. A context learns of a lost lease only when its
	// holder's renewal does; Held is the time fence that closes the gap
	// a process paused past its lease would otherwise write through.
	// It is called under the journal's order lock: it must be cheap and
	// must not block.
	Held func() error
	// SettleGrace bounds how long live workers get to settle once the
	// brain returned and they were cancelled (default 10s). A worker
	// still running then is charged at its ceiling and named in
	// TeardownUnconfirmed.
	SettleGrace time.Duration
	// ChildSettleGrace is how long live workers may go on running once
	// the manager's brain returned or failed on its own (not through
	// stop, a cancellation or the deadline) before they are cancelled
	// (§3.6 childSettleGraceMs): a manager that died did not make its
	// workers unhealthy, and a worker mid-task holds work already paid
	// for. A worker that delivers within it can still win the run; a
	// run whose result the manager already submitted does not wait. It
	// is bounded by the run's deadline, and a run cancellation or the
	// caller's context ends it. 0 cancels them at once;
	// WaitForChildren waits until every one settled (the spec's null).
	ChildSettleGrace time.Duration
	// Now replaces time.Now; Logger receives what the run cannot return.
	Now    func() time.Time
	Logger *slog.Logger
	// Observer, when set, watches the run as it happens (see Observer;
	// telemetry.Tracing.SuperviseObserver traces it). Nil installs
	// nothing.
	Observer Observer
	// Analysts are lenses the run offers beside BuiltinLenses (run_analyst
	// runs only lenses on the menu); each must pass ValidateLens.
	Analysts []Lens
	// AfterSettle, when set, is called once per settled worker of this
	// process (not for a resumed run's replayed ones), after its
	// settlement is journaled and queued for Await; it may spawn or run
	// analysts. Until it returns, Await does not report the run idle.
	AfterSettle func(ctx context.Context, c *Coordinator, s Settled)
	// AnalystModel, when set, runs each analyst in process as a tool
	// loop on this model, with its lens's tool group mounted (the trace
	// tools over the run's settled workers, ToolGroupTools) and its
	// limits enforced: model calls beyond maxLlmCalls (or maxIterations,
	// the smaller) are not made, tool calls beyond maxToolCalls are
	// refused as tool results, output beyond maxOutputChars is clipped;
	// an analyst cut short settles with what it found, the limit named
	// in its finding.
	// When nil, analysts run on the Executor with the analysed output in
	// their task and no tools.
	AnalystModel contract.ChatModel
	// OnResume, when set, is called on a resumed run once the journal is
	// replayed, before the settlement hooks the earlier process left
	// unfinished run again (AfterSettle, see KindAfterSettle) and before
	// the brain drives: a layer above rebuilds its own state from the
	// journal (Coordinator.ReadJournal) there. An error ends the run as
	// the brain's failure would (driver-failed).
	OnResume func(ctx context.Context, c *Coordinator) error
	// RecoverTimeout bounds a resumed run's recovery of the workers its
	// journal left bound to an execution but unsettled (Recoverer), all
	// of them together; 0 means DefaultRecoverTimeout. Workers not
	// recovered within it stay in doubt.
	RecoverTimeout time.Duration
	// MaxRestarts and RestartsWithin are the run's restart-intensity
	// breaker (§3.6 "OTP breaker: more than maxRestarts within withinMs
	// → no-winner"; the reference's maxRestarts and withinMs). A restart
	// is a worker of the tree going down (settled failed or cancelled)
	// while the manager drives: the breaker restarts nothing, it
	// circuits the manager's own re-spawns. More than MaxRestarts downs
	// within RestartsWithin, on the run's clock (Now), trip it: the trip
	// is journaled (KindBreakerTripped), the scope is aborted (every
	// later spawn is refused scope-aborted), the manager is stopped and
	// every live worker cancelled, and the run ends no-winner
	// all-children-down (a tripped breaker outranks the abort it
	// raised, as in the reference) with SupervisedResult.Breaker naming
	// the trip. RestartsWithin 0 leaves the breaker off; MaxRestarts 0
	// with a window trips on the first down. Each process counts the
	// downs it sees (a resumed run's replayed ones are not counted
	// again), and a run whose journal holds a trip stays tripped.
	MaxRestarts    int
	RestartsWithin time.Duration
	// Root, when set, is the caller's handle on the live run (§3.6
	// rootHandle): RootHandle.Abort ends it no-winner aborted. One
	// handle serves one run at a time.
	Root *RootHandle
	// DriverRetry is how an external-harness manager whose turn failed
	// is driven again (§3.6 driverRetry; the zero value retries under
	// the defaults, Disabled ends the run at the first failure), and
	// Reprompt how one that returned while the run has delivered
	// nothing is (§3.6 repromptOnUnmet; the zero value never
	// re-prompts; refused for the router brain, which runs its loop in
	// process). Both apply to brains that drive through
	// Coordinator.DriveAttempts (coordmcp.HarnessBrain). OnDriverAttempt,
	// when set, is told of each attempt as it ends (also journaled,
	// KindDriverAttempt); it should return quickly: the loop waits for
	// it until the run's deadline, a cancellation or a stop, then at
	// most ObserverGrace more, and a panic in it is logged, never the
	// run's failure.
	DriverRetry     DriverRetry
	Reprompt        Reprompt
	OnDriverAttempt func(DriverAttempt)
	// WorkerRetry is how a worker whose execution was refused before
	// anything ran (a pre-spawn refusal that spent nothing; see
	// WorkerRetry for the two proofs) is started again, within the same
	// reservation, after a doubling backoff, until MaxAttempts, MaxTotal
	// or the run's deadline (§3.6 workerRetry). The zero value never
	// retries. Each re-entry is journaled (KindWorkerRetry) and passed
	// to OnWorkerRetry before its wait; OnWorkerRetry should return
	// quickly: it is waited for at most ObserverGrace, and a panic in it
	// is logged, never the run's failure. Negative bounds, a nil
	// PreSpawn signature, or OnWorkerRetry without retries are refused
	// (*OptionError, /workerRetry/…, /onWorkerRetry).
	WorkerRetry   WorkerRetry
	OnWorkerRetry func(WorkerRetryAttempt)
	// StopRule, when set, is the run's no-progress bound (§3.6
	// stopRule: a run settles on "deadline, cancel, exhausted budget,
	// accepted result, or the no-progress bound"): a rule over the root
	// manager's progress — its workers' settlements, the best delivered
	// objective so far, its live workers — built from NoProgressFor,
	// Plateau and AllWorkersStalled (AnyOf, AllOf) or the caller's own.
	// It is read after each settlement of a worker the root manager
	// spawned and, for the router brain, before each of its model turns
	// after the first, only while nothing else ended the manager: it
	// adds a stop, never keeps a run past a ceiling. When it stops, the
	// stop is journaled (KindProgressStopped), the scope aborted, the
	// manager stopped and its live workers cancelled
	// (ErrProgressStopped); the run then ends as a stopped manager's
	// does — winner when a worker delivered (or the manager submitted),
	// else no-winner (all-children-down, or budget-exhausted when a
	// ceiling was reached) — with SupervisedResult.ProgressStop naming
	// the rule's reason. A resumed run whose journal holds the stop stays
	// ended by it. Nil: ceilings only.
	StopRule StopRule
	// OnProgressStop, when set, is told once, with its reason, when
	// StopRule ends the run (not again by a resume of it); it needs
	// StopRule, and must not block.
	OnProgressStop func(reason string)
	// ExtraTools are work tools the root manager's router brain may call
	// itself beside the coordination verbs (§3.6 extraTools,
	// executeExtraTool: Name, Description and InputSchema are what the
	// model is offered, Run executes a call — the caller's
	// executeExtraTool — its result the tool result, its error a tool
	// failure the manager reads). Router brain only (the reference's
	// router arm): refused with another brain, and for a name that is a
	// coordination verb's (bare or with ToolPrefix), repeated, outside
	// MCP's tool name rule (1 to 128 of A-Z a-z 0-9 _ - .), or with no
	// Run (an ExtraToolsOfferer — package graph's root brain — offers
	// them too, through DriveTools or Coordinator.ExtraTools). The
	// manager's profile must not declare them; they are added to
	// what it is offered. Each call is journaled before it runs and its
	// outcome after (KindExtraToolCalled, KindExtraToolDone), so a
	// resumed manager's transcript replays it exactly once: a re-run
	// call gets the journaled outcome, and one whose outcome was never
	// journaled is answered in doubt, not run again.
	ExtraTools []contract.Tool
	// ResolveSupervisorTools, when set, gives each manager of the run —
	// the root and every nested manager — product tools of its own
	// (§3.6 resolveSupervisorTools): it is called once per manager node,
	// when its brain first asks (Coordinator.NodeTools), with that
	// node's trusted identity (NodeContext), and what it returns is
	// offered to that manager only, beside its coordination verbs — as
	// tools of its tool loop by the router brain, on the coordination
	// MCP server by an external harness's brain (coordmcp), and through
	// NodeTools to a caller's Brain. A name that is a coordination
	// verb's, repeats, breaks MCP's tool name rule (as ExtraTools), or is
	// one of the root's ExtraTools is refused, and
	// so is a tool with no Run: the manager's brain then fails (the root's
	// run ends driver-failed; a nested manager settles failed), as it does
	// when the resolver returns an error, panics, or has not answered once
	// the manager's context ended. Each call is journaled as an
	// ExtraTools call is (at most once across a resume, a started and
	// unanswered call answered in doubt), and runs with a context that
	// ends when its manager's does (the caller, the deadline, the
	// breaker, a stop, its parent). Nil: no product tools; ExtraTools
	// stay the root router's own.
	ResolveSupervisorTools func(ctx context.Context, node NodeContext) ([]SupervisorTool, error)
	// PeerMail, when set, opts the run into peer mail (§9): every
	// worker is given send_mail and read_mail bound to its own node
	// (Work.PeerMail), to mail its live siblings — workers of the same
	// manager — within the bounds PeerMail sets. Every attempt is a
	// coordination record (CoordMail), which a resume reads back. Nil:
	// off, workers are given no mail tools.
	PeerMail *PeerMail
	// Finalizer, when set, chooses the run's winner among its
	// candidates at its end (§3.6 finalizer; see Finalizer): the
	// root's delivered children and the manager's submitted result.
	// Nil runs DefaultFinalizer (the submitted result, else the
	// highest-scoring child). The choice is journaled with the run's
	// finished record, so a resume of the ended run (ReturnEnded)
	// returns the same winner without calling it again.
	// FinalizerTimeout bounds it (0: DefaultFinalizerTimeout).
	Finalizer        Finalizer
	FinalizerTimeout time.Duration
	// StallAfter is how long a running worker may go without activity
	// before observe_agent's progress reads it stalled (§3.6
	// stallAfterMs; §9 progress.stalled), for every manager of the run
	// (the root and nested ones, whatever brain drives them: the router
	// brain, a coded Brain or an external harness through coordmcp) and
	// for the progress a StopRule reads (AllWorkersStalled). It is a
	// derived read: nothing is killed or retried. 0 means the runtime
	// default, the package's StallAfter; a negative value is refused
	// (*OptionError, /stallAfter).
	StallAfter time.Duration
	// ContinuityByProfile is the default continuity of a spawn_worker
	// call that names no continuity, by the worker's profile name
	// (§3.6 continuityByProfile): ContinuityResume makes such a spawn
	// re-attach to the latest settled worker of its label (the profile
	// name when it has no label) under the same manager; a call's own
	// continuity ("fresh" or "resume") overrides it either way. It
	// applies to every manager's spawns (the root's and nested ones',
	// whatever brain drives them). A profile it does not name spawns
	// fresh; nil: every spawn without a continuity is fresh. Values are
	// ContinuityFresh (or "fresh") and ContinuityResume; any other is
	// refused (*OptionError, /continuityByProfile/<name>).
	//
	// A defaulted resume refuses as an explicit one does except when
	// there is nothing to resume, as the reference's resolveContinuity
	// does (tangle-network/agent-runtime, the coordination tools'
	// resolveContinuity: "an EXPLICIT 'resume' with no settled prior
	// worker refuses (resume-no-prior) — the DECLARED default degrades
	// to 'fresh' instead"): with no settled worker of its label it
	// spawns fresh, so the profile's first spawn is an ordinary one;
	// while a worker of its label is live it is refused
	// resume-while-live (steer the live one, or pass continuity
	// "fresh" for a parallel sibling); with a key it is refused
	// resume-with-key (a key names run-once work; pass continuity
	// "fresh" to spawn it keyed). The spawn's journaled record holds
	// the continuity it resolved to (and the worker it resumes), so a
	// resumed run replays the same decision and its replayed calls
	// report it; an executor that cannot re-attach to a session
	// (ResumesSessions false) refuses a resolved resume at preflight,
	// as it refuses an explicit one.
	ContinuityByProfile map[string]Continuity
}

// OptionError refuses an option Supervise cannot run with: Field is
// the Options field, Pointer its RFC 6901 pointer under the reference's
// option names (/stallAfter, /continuityByProfile/<name>), Reason why.
// It matches ErrInvalidOptions.
type OptionError struct {
	Field, Pointer, Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%v: %s (%s): %s", ErrInvalidOptions, e.Field, e.Pointer, e.Reason)
}

// Is makes the error match ErrInvalidOptions.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOptions }

// BreakerTrip is a tripped restart-intensity breaker (Options.MaxRestarts):
// Downs workers went down within WithinMS milliseconds, more than
// MaxRestarts, the last of them Node, at AtMS on the run's clock.
type BreakerTrip struct {
	Downs       int    `json:"downs"`
	MaxRestarts int    `json:"maxRestarts"`
	WithinMS    int64  `json:"withinMs"`
	AtMS        int64  `json:"atMs"`
	Node        NodeID `json:"node"`
}

// Status is a supervised run's outcome.
type Status string

// Statuses.
const (
	StatusWinner   Status = "winner"
	StatusNoWinner Status = "no-winner"
)

// NoWinnerReason says why a run has no winner.
type NoWinnerReason string

// No-winner reasons (§3.6 Result). Lifecycle causes (cancelled,
// budget-exhausted, aborted, and a child that went down while the brain
// drove: all-children-down) outrank driver-failed, which is the reason
// only when no child was down when the brain failed (a child the run's
// end cancelled does not count). A run is
// budget-exhausted when a spawn was refused budget-exhausted, a budget
// stop ended its brain, or its deadline passed; a spawn refused
// usd-unbudgeted ran no pool out and does not make it so. A run whose
// restart-intensity breaker tripped (Options.MaxRestarts) is
// all-children-down, and one its caller aborted (RootHandle.Abort) is
// aborted: both outrank every other reason, the abort having ended the
// run before anything else could — unless the run's deadline ended it
// first: the first end decides, so a run whose deadline passed and that
// was then aborted or cancelled is budget-exhausted (journaled,
// KindDeadlinePassed, so a resume agrees). A budget pool that ran out
// ends nothing by itself: an abort or cancellation after it, or
// before, outranks it, as in the reference. A run whose caller's context was
// cancelled is aborted too (the reference's caller abort signal), with
// Cancellation naming the context; cancelled is only a CancelRun
// request's, with its source and operation id.
const (
	ReasonAllChildrenDown NoWinnerReason = "all-children-down"
	ReasonBudgetExhausted NoWinnerReason = "budget-exhausted"
	ReasonAborted         NoWinnerReason = "aborted"
	ReasonCancelled       NoWinnerReason = "cancelled"
	ReasonDriverFailed    NoWinnerReason = "driver-failed"
)

// Winner is the delivered result.
type Winner struct {
	// Node is the worker whose result won, or the root for a result the
	// manager submitted.
	Node      NodeID
	Text      string
	Output    canonjson.Value
	OutRef    string
	Verdict   *kernel.Verdict
	Submitted bool
}

// DriverError is a failed brain's error: Name is the first exported
// error type along its chain (StopRuleError, FinalizerError), or
// "Error" for an anonymous one (errors.New, fmt.Errorf, errors.Join);
// Message is the error's text.
type DriverError struct {
	Name, Message string
}

// Cancellation says who cancelled a run: the CancelRun request of a
// no-winner cancelled run, or the caller's context (CancelSourceContext)
// of a no-winner aborted one.
type Cancellation struct {
	// Source is the CancelRun request's source, or CancelSourceContext
	// when the caller's context ended the run (reason aborted).
	Source, Reason string
	// OperationID names the CancelRun request that cancelled the run
	// ("" for a caller's context).
	OperationID string
}

// CancelSourceContext is Cancellation.Source of a run whose caller's
// context was cancelled — the reference's caller abort signal, so the
// run ends no-winner aborted, not cancelled (that is a CancelRun
// request's): the process driving it stopped (shut down, lost its
// claim, timed out, was sent SIGINT), which interrupts the run rather
// than ending it. Its finished record is journaled, but a resume with
// Options.ReturnEnded drives the run on instead of returning it.
const CancelSourceContext = "context"

// WorkerSummary is one node of the tree as the result reports it.
type WorkerSummary struct {
	NodeInfo
	OutRef    string
	Delivered bool
	Verdict   *kernel.Verdict
	Replayed  bool
	// Reason is why a worker that did not end done ended as it did
	// (its failure, its cancellation); "" when it has none.
	Reason string
	// CheckError is why the completion check could not judge the
	// worker's result (it threw, timed out); "" when it judged.
	CheckError string
	// InDoubtReason says why a worker left in doubt was not recovered
	// (its execution is still running, unreadable, or its executor is
	// no Recoverer); a later resume tries again.
	InDoubtReason string
}

// summaryLocked is node n as the result reports it; c.mu is held.
func (c *Coordinator) summaryLocked(n NodeInfo) WorkerSummary {
	ws := workerSummary(n, c.workers[n.ID])
	if n.InDoubt && ws.InDoubtReason == "" {
		ws.InDoubtReason = c.unstarted[n.ID]
	}
	return ws
}

// workerSummary is node n, worker w (nil when it has none), as the
// result reports it.
func workerSummary(n NodeInfo, w *worker) WorkerSummary {
	ws := WorkerSummary{NodeInfo: n}
	if w == nil {
		return ws
	}
	ws.OutRef, ws.Delivered, ws.Verdict, ws.Replayed = w.outRef, w.delivered, w.verdict, w.replayed
	if n.InDoubt {
		ws.InDoubtReason = w.reason
	} else {
		ws.Reason, ws.CheckError = w.reason, w.checkErr
	}
	return ws
}

// Breakdown splits the spend: the brain's own inference and the
// workers'.
type Breakdown struct {
	DriverInference, ChildWork SpentTotal
}

// SupervisedResult is how a supervised run ended; it is never coerced to
// a best-effort output. Status winner carries Winner; no-winner carries
// Reason, and Error for driver-failed, Cancellation for cancelled.
type SupervisedResult struct {
	RunID        string
	Status       Status
	Reason       NoWinnerReason
	Winner       *Winner
	Error        *DriverError
	Cancellation *Cancellation
	// Tree is every node in seq order; DownCount counts failed and
	// cancelled ones.
	Tree      []WorkerSummary
	DownCount int
	// Spent is the whole run's spend (Breakdown's sum); MS is the wall
	// clock from the run's original start, also on resume.
	Spent     SpentTotal
	MS        int64
	Breakdown Breakdown
	// SpendGaps names every node whose spend is not fully known.
	SpendGaps []SpendGap
	// TeardownUnconfirmed names the workers whose teardown was never
	// acknowledged (§3.6 teardownUnconfirmed{id, label, runtime,
	// status}): workers still running when the run ended, charged at
	// their ceilings, and settled workers whose executor could not
	// confirm their environment was destroyed, whose slots stayed
	// charged. Each is journaled (KindTeardownUnconfirmed).
	TeardownUnconfirmed []UnconfirmedTeardown
	// Breaker is the restart-intensity breaker's trip that ended the
	// run (Options.MaxRestarts); nil when it did not trip.
	Breaker *BreakerTrip
	// ProgressStop is how the run's no-progress bound ended it
	// (Options.StopRule); nil when it did not.
	ProgressStop *ProgressStop
	// Resumed says the run continued an earlier process's journal.
	Resumed bool
	// BrainText is the brain's final text.
	BrainText string
	// FinalizerNote says why the run has no winner though it had
	// candidates: its Finalizer chose none, or chose a node that is no
	// candidate ("" otherwise; a failed finalizer is Error).
	FinalizerNote string
	// Continuation is what the run's driver loop did (DriveAttempts):
	// its attempts, re-prompts, retries and pauses; nil when the brain
	// did not drive through it, and on a run resumed to its journaled
	// end. A resumed run's loop starts fresh: it counts this process's
	// attempts; an earlier process's are in the journal
	// (KindDriverAttempt).
	Continuation *DriverContinuation
}

// ErrUnsupportedHarness: the manager's harness needs an external brain
// that is not built in; pass Options.Brain (coordmcp.HarnessBrain for
// claude-code, codex and opencode).
var ErrUnsupportedHarness = errors.New("supervise: the manager's harness needs an external brain")

// Supervise runs a manager agent (manager) on task: its brain spawns,
// observes and settles workers, every spawn reserved from one conserved
// pool and delivered only when the caller's check passed (spec runtime
// §3.6). It returns an error only when it could not run the run at all
// (invalid options, a journal it cannot open or resume), lost the
// run's store spawn journal to another process that resumed it
// (ErrSpawnLogLost: that process delivers the run), or beside the
// result when that result's finished record could not be journaled
// (ErrOutcomeNotJournaled); every way a run ends is a SupervisedResult
// arm. A resumed run whose journal already holds its finished record
// returns that record's result without driving the brain or running a
// worker (a finished record written before outcomes were journaled
// carries none, and its run is driven again).
func Supervise(ctx context.Context, manager *profile.Profile, task string, o Options) (SupervisedResult, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	brain, exec, err := o.resolve(manager)
	if err != nil {
		return SupervisedResult{}, err
	}
	if o.Root != nil {
		// One run at a time: taken before anything of this run exists.
		if err := o.Root.reserve(); err != nil {
			return SupervisedResult{}, fmt.Errorf("%w: Root: %w", ErrInvalidOptions, err)
		}
		defer o.Root.release()
	}
	managerDigest, err := profile.Digest(manager)
	if err != nil {
		return SupervisedResult{}, fmt.Errorf("%w: the manager profile has no digest: %w", ErrInvalidOptions, err)
	}
	runID, start, deadline := o.RunID, now(), o.Deadline
	runDir := o.RunDir
	if runDir == "" && o.WorkspaceRoot != "" {
		if runID == "" {
			runID = kernel.NewID("supervise")
		}
		runDir = RunDirIn(o.WorkspaceRoot, runID)
	}
	var openSpawn func(context.Context) (SpawnLog, error)
	if o.SpawnStore != nil {
		if runID == "" {
			runID = kernel.NewID("supervise")
		}
		openSpawn = func(ctx context.Context) (SpawnLog, error) {
			sl, err := OpenStoreSpawnLog(ctx, o.SpawnStore, runID, StoreSpawnLogOptions{LeaseTTL: o.SpawnLeaseTTL, Logger: logger})
			if err != nil {
				if undecodable(err) {
					// A row no holder wrote (torn, or not a record): refused
					// as the run dir's journal refuses a line that is no
					// record, naming where the journal is.
					return nil, &ResumeError{RunDir: storeJournalName(runID), Reason: "reading the journal", Err: err}
				}
				return nil, err
			}
			return sl, nil
		}
	}
	if runDir != "" && runID != "" {
		// Checked again once the run's id is final (openLayout); here so
		// that another run's directory is refused before anything is
		// written in it.
		if err := checkRunDirOwner(runDir, runID); err != nil {
			return SupervisedResult{}, err
		}
	}
	log, prior, err := openRunLogWith(ctx, runDir, openSpawn)
	if err != nil {
		return SupervisedResult{}, err
	}
	defer log.close()
	// Set before any goroutine writes through the log: from ctx's end
	// with a lost lease on, nothing more is journaled (see the AfterFunc
	// below).
	log.holder, log.held = ctx, o.Held

	resumed := len(prior) > 0
	if resumed {
		first := prior[0]
		switch {
		case !o.Resume:
			return SupervisedResult{}, &RunExistsError{RunDir: log.where, RunID: first.RunID}
		case first.Kind != KindRunStarted:
			return SupervisedResult{}, &ResumeError{RunDir: log.where, Reason: "the journal does not start with run-started"}
		case runID != "" && runID != first.RunID:
			return SupervisedResult{}, &ResumeError{RunDir: log.where, Reason: "the journal is another run's",
				Err: &RunDirMismatchError{RunDir: runDir, RunID: runID, Recorded: first.RunID}}
		}
		runID, start = first.RunID, time.UnixMilli(first.StartedAtMS)
		deadline = time.Time{}
		if first.DeadlineMS != 0 {
			deadline = time.UnixMilli(first.DeadlineMS)
		}
		// The journal's budget, per-worker default and task are the
		// run's: a restart never mints capacity (§6) nor changes the
		// task (§3.6).
		run, err := adoptJournaled(first, &o, task, managerDigest, logger)
		var mismatch *ResumeMismatchError
		if errors.As(err, &mismatch) {
			return SupervisedResult{}, &ResumeError{RunDir: log.where, Reason: "the options differ from the journal", Err: err}
		}
		if err != nil {
			return SupervisedResult{}, err
		}
		o.Budget, o.PerWorker, task = run.budget, run.perWorker, run.task
	} else {
		if o.Budget.Tokens == nil || o.Budget.Iterations == nil {
			return SupervisedResult{}, fmt.Errorf("%w: Budget needs token and iteration ceilings (there is no journal to resume)", ErrInvalidOptions)
		}
		if o.Resume {
			// A resume that found no journal starts a new run (resolve
			// checked a plain new run already).
			if err := perWorkerFits(o.Budget, o.PerWorker); err != nil {
				return SupervisedResult{}, err
			}
		}
		if runID == "" {
			runID = kernel.NewID("supervise")
		}
	}

	if err := log.lock.setRunID(runID); err != nil {
		logger.Warn("supervise: naming the run in its lock file", "err", err)
	}
	pool, err := ledger.NewPool(o.Budget, ledger.PoolOptions{Deadline: deadline, Now: now})
	if err != nil {
		return SupervisedResult{}, fmt.Errorf("%w: Budget: %w", ErrInvalidOptions, err)
	}
	if runDir != "" {
		// The cross-process projections of the journal: state.json and
		// progress.ndjson, and the stream logs: root-stream.jsonl and
		// workers/<label>.ndjson (§3.6 "Supervisor run layout").
		if log.layout, err = openLayout(runDir, runID, prior, pool.Readout, now, logger, ctx.Value(unsyncedJournalKey{}) != nil); err != nil {
			return SupervisedResult{}, err
		}
		log.layout.setFence(log.fence())
		if log.streams, err = openStreams(runDir, prior, log.fence(), now, logger); err != nil {
			return SupervisedResult{}, err
		}
	}
	lenses, err := newLensMenu(o.Analysts)
	if err != nil {
		return SupervisedResult{}, err
	}
	grace := o.SettleGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	c := &Coordinator{self: NodeID(runID), wake: make(chan struct{}), core: &core{runID: runID, pool: pool, log: log, exec: exec, profiles: o.Profiles,
		authoredOK: o.AuthoredProfiles, authorizeHook: o.AuthorizeSpawn != nil, check: o.Deliverable,
		finalizer: o.Finalizer, finalizerTimeout: o.FinalizerTimeout, authorizeMessage: o.AuthorizeMessage,
		escalateQuestion: o.EscalateQuestion, escalateTimeout: escalateTimeout(ctx), watch: o.WatchWorkers, watchRaised: map[NodeID]int{},
		logger: logger, now: now, workers: map[NodeID]*worker{}, ctl: newControl(runDir, ctx.Value(noControlScanKey{}) != nil),
		lenses: lenses, analysts: map[NodeID]analystOf{}, afterSettle: o.AfterSettle, requested: map[string]bool{},
		analystModel: o.AnalystModel, analystStops: map[NodeID]string{},
		views: map[NodeID]*Coordinator{}, router: o.Router, maxTurns: o.MaxTurns, managerBrain: o.ManagerBrain, settleGrace: grace,
		driverLoop: &driverLoop{retry: o.DriverRetry, reprompt: o.Reprompt, onAttempt: o.OnDriverAttempt},
		progress:   &progressRule{rule: o.StopRule, notify: o.OnProgressStop, timeout: stopRuleTimeout(ctx)},
		extraTools: o.ExtraTools, extraStarted: map[string]bool{}, extraDone: map[string]extraOutcome{},
		resolveTools: o.ResolveSupervisorTools, manager: manager,
		stallAfter: o.StallAfter, continuityByProfile: maps.Clone(o.ContinuityByProfile),
		workerRetry: o.WorkerRetry, onWorkerRetry: o.OnWorkerRetry, mail: newPostOffice(o.PeerMail)}}
	c.root = c
	if o.RestartsWithin > 0 {
		c.breaker = &restartBreaker{max: o.MaxRestarts, within: o.RestartsWithin}
	}
	// An executor that declares ResumesSessions() false cannot honour
	// continuity resume: the value counts, not the method's presence.
	rs, ok := exec.(interface{ ResumesSessions() bool })
	canResume := ok && rs.ResumesSessions()
	scope, err := New(pool, ScopeOptions{RootID: NodeID(runID), PerWorker: o.PerWorker, MaxLiveWorkers: o.MaxLiveWorkers,
		MaxDepth: o.MaxDepth, AllowedModels: o.AllowedModels, AuthorizeSpawn: o.AuthorizeSpawn, Now: o.Now,
		Preflight: func(r SpawnRequest) error {
			if r.Continuity == ContinuityResume && !canResume {
				return errors.New("the executor cannot re-attach to a worker's session")
			}
			return nil
		}})
	if err != nil {
		return SupervisedResult{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	c.scope = scope
	if o.Observer != nil {
		c.obs = &observing{o: o.Observer, log: logger}
	}
	var ended *OutcomeRecord
	if resumed {
		if err := c.replayRecords(prior); err != nil {
			return SupervisedResult{}, err
		}
		c.replayQuestions(ctx, prior)
		if o.ReturnEnded {
			if ended, err = journaledOutcome(prior); err != nil {
				return SupervisedResult{}, &ResumeError{RunDir: log.where, Reason: "the journal's finished record is not a result", Err: err}
			}
			if ended != nil {
				if err := winnerJournaled(prior, NodeID(runID), ended); err != nil {
					return SupervisedResult{}, &ResumeError{RunDir: log.where, Reason: "the journal's finished record is not its result", Err: err}
				}
			}
		}
	} else {
		rec := Record{Kind: KindRunStarted, RunID: runID, StartedAtMS: start.UnixMilli(), Task: task,
			Budget: budgetRecord(o.Budget), ManagerDigest: managerDigest, DeliverableDigest: o.Deliverable.identityDigest()}
		if !zeroBudget(o.PerWorker) {
			rec.PerWorker = budgetRecord(o.PerWorker)
		}
		if !deadline.IsZero() {
			rec.DeadlineMS = deadline.UnixMilli()
		}
		if err := log.append(ctx, rec); err != nil {
			if errors.Is(err, store.ErrFenced) || errors.Is(err, ErrSpawnLogLost) {
				// Taken over (or past its lease) before its first record:
				// the run is the other process's to start.
				return SupervisedResult{}, spawnLogLost(err)
			}
			return SupervisedResult{}, err
		}
	}

	var managerName string
	if manager.Name != nil {
		managerName = *manager.Name
	}
	begun := RunStart{RunID: runID, Manager: managerName, Resumed: resumed, Budget: o.Budget}
	if sl, ok := log.spawn.(*StoreSpawnLog); ok {
		begun.JournalGeneration = sl.Fence().Generation
	}
	ctx = c.obs.runStarted(ctx, begun)
	// The observer that saw the run start sees it end, exactly once, on
	// every return from here: with the result, or — where Supervise
	// returns an error instead (the journal lost to another process, a
	// finished run's OnResume failed) — with a result that has no
	// Status.
	endCtx, toldEnded := context.WithoutCancel(ctx), false
	runEnded := func(res SupervisedResult) {
		if !toldEnded {
			toldEnded = true
			c.obs.runEnded(endCtx, res)
		}
	}
	defer func() { runEnded(SupervisedResult{RunID: runID, Resumed: resumed}) }()

	// Workers outlive a stopped brain only until they are cancelled
	// below, and never the run's deadline.
	// The deadline is absolute and read on the run's clock (Options.Now):
	// the contexts get what is left of it, the original remainder on a
	// resume, never a fresh deadline.
	workCtx := context.WithoutCancel(ctx)
	brainCtx, stop := context.WithCancelCause(ctx)
	var deadlineErr error
	if !deadline.IsZero() {
		left := deadline.Sub(now())
		var cancelWorkDeadline, cancelDeadline context.CancelFunc
		// A worker the deadline cuts reads which deadline, not only
		// "context deadline exceeded" (the reference's abort-reason rule:
		// a cascaded abort carries the upstream reason).
		deadlineErr = fmt.Errorf("supervise: the run's deadline (%s) passed: %w", deadline.UTC().Format(time.RFC3339Nano), ledger.ErrDeadline)
		workCtx, cancelWorkDeadline = context.WithTimeoutCause(workCtx, left, deadlineErr)
		defer cancelWorkDeadline()
		brainCtx, cancelDeadline = context.WithTimeoutCause(brainCtx, left, errRunDeadline)
		defer cancelDeadline()
	}
	c.workCtx, c.cancelWork = context.WithCancelCause(workCtx)
	c.mu.Lock()
	c.stopFn, c.brainCtx = stop, brainCtx
	c.mu.Unlock()
	// The context's first cause is the run's first end: a deadline that
	// ended the manager before an abort, a cancellation or the caller's
	// context did is journaled as it happens, so a resume agrees.
	stopDeadlineWatch := context.AfterFunc(brainCtx, func() {
		if errors.Is(context.Cause(brainCtx), errRunDeadline) {
			c.noteDeadlineFirst(context.WithoutCancel(ctx))
		}
	})
	defer stopDeadlineWatch()
	if o.Root != nil {
		// The caller's handle reaches the run while its manager drives
		// (abortByCaller refuses it once the manager no longer does).
		o.Root.set(func(reason string) error { return c.abortByCaller(context.WithoutCancel(ctx), reason) })
	}
	// A caller cancellation reaches the workers too. A caller whose
	// context ended because it lost the lease it held the run under
	// (its cause matches contract.ErrLeaseLost: a delegation queue whose
	// claim another process took over) no longer owns the run: nothing
	// more is journaled for it, its end included, so the next holder
	// resumes what this process committed while it owned it.
	unwatch := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if errors.Is(cause, contract.ErrLeaseLost) {
			log.revoke(cause)
			cause = runLost(cause)
		} else {
			cause = callerEnded(cause)
		}
		c.cancelWork(cause)
	})
	defer unwatch()
	// So does the loss of a store journal's lease (taken over by another
	// process, or run out unrenewed): the run is no longer this
	// process's to drive, and its brain and workers stop at once rather
	// than spend until they end by themselves — cut as a lost lease
	// cuts a kernel run (runLost), which leaves their work to the run's
	// next holder.
	if lost := log.lost(); lost != nil {
		quit := make(chan struct{})
		defer close(quit)
		go func() {
			select {
			case <-lost:
				cause := runLost(log.heldErr())
				// Workers first: a brain stopped first may return and
				// have them cancelled as "the manager returned" before
				// they learn the journal was lost.
				c.cancelWork(cause)
				stop(cause)
			case <-quit:
			}
		}()
	}

	// record stores the ended run's record (Options.Store).
	record := func(res SupervisedResult, outcome *OutcomeRecord) error {
		if o.Store == nil {
			return nil
		}
		sl, _ := log.spawn.(*StoreSpawnLog)
		rec := c.runRecord(res, outcome, ManagerRecord{Name: managerName, ProfileDigest: managerDigest}, task, runDir)
		return storeRunRecord(ctx, o.Store, sl, rec, LedgerEntries(res), now())
	}
	var resumeErr error
	if resumed && o.OnResume != nil {
		resumeErr = o.OnResume(c.workCtx, c)
	}
	// Workers the journal left started without a settlement but bound
	// to an execution are recovered from it — once a layer above rebuilt
	// its state (OnResume), since a recovered settlement is checked and
	// reported as a fresh one, and before the settlement hooks and the
	// brain run; a run resumed to its journaled end only marks them.
	c.recoverTimeout = o.RecoverTimeout
	c.recoverInDoubt(c.workCtx, ended == nil)
	if ended != nil {
		// The run ended in an earlier process, which journaled its
		// outcome before reporting it: the same result again, with no
		// brain driven and no worker run (a process killed after the
		// finished record is resumed, not re-run).
		if resumeErr != nil {
			return SupervisedResult{}, &ResumeError{RunDir: log.where, Reason: "OnResume of a finished run", Err: resumeErr}
		}
		res := c.finishedResult(ended)
		res.Resumed = true
		runEnded(res)
		// A process killed between its end record and the run's record
		// left it unrecorded: recorded now.
		rerr := record(res, ended)
		if ended.LostCount > 0 {
			// The run ended with records lost: its resume says so too.
			return res, errors.Join(&JournalLossError{Count: ended.LostCount, Lost: ended.Lost}, rerr)
		}
		return res, rerr
	}
	// A run whose deadline passed before its brain drove (a resume after
	// it) ends at once, as the deadline ends a run: nothing more is
	// driven, run or spent.
	late := !deadline.IsZero() && !now().Before(deadline)
	// A run aborted before its manager drove — its journal holds its
	// breaker's trip or its caller's abort — stays aborted: nothing
	// more is driven, run or spent.
	// So does one its stop rule ended (KindProgressStopped).
	aborted := c.runAborted() || c.progressStopped()
	if resumed && resumeErr == nil && !late && !aborted {
		// What the process before left half done: settlement hooks that
		// never returned, analyses requested but never started, nested
		// managers still driving.
		c.resumeAnalyses(c.workCtx)
		c.redriveManagers()
		c.resumeNestedAnalyses(c.workCtx)
	}
	if resumeErr != nil {
		brain = BrainFunc(func(context.Context, *Coordinator, string) (BrainReport, error) {
			return BrainReport{}, fmt.Errorf("supervise: OnResume: %w", resumeErr)
		})
	}
	// Steer and cancel requests from other processes are picked up
	// while the brain drives; run end expires what is left.
	c.openManagerInbox(brain)
	stopWatch := c.watchControl(context.WithoutCancel(ctx))
	var report BrainReport
	var driveErr error
	if !late && !aborted {
		report, driveErr = drive(brainCtx, brain, c, task)
	}
	c.mu.Lock()
	c.returned = true // the StopRule is read no more (rootDriving)
	c.mu.Unlock()
	// The children down when the driver returned, before the run's end
	// cancels the live ones: a real down child outranks the driver's
	// rejection (§3.6 "lifecycle causes outrank driver-failed").
	downWhileDriving := c.downCount()
	if brainCtx.Err() == nil && o.ChildSettleGrace > 0 && !c.hasSubmitted() {
		// The manager returned or failed on its own (not a stop, a
		// cancellation or the deadline): its live workers finish what
		// they hold, within the grace and the run's deadline.
		c.childSettleGrace(ctx, o.ChildSettleGrace, deadline)
	}
	c.closeManagerInbox(ctx) // a root steer still waiting is not_live
	stopWatch()
	stopped := errors.Is(context.Cause(brainCtx), ErrStopped)
	deadlinePassed := !deadline.IsZero() && ctx.Err() == nil && (late || errors.Is(brainCtx.Err(), context.DeadlineExceeded) || !now().Before(deadline))
	if !deadline.IsZero() && !aborted && (errors.Is(context.Cause(brainCtx), errRunDeadline) ||
		(brainCtx.Err() == nil && (late || !now().Before(deadline)))) {
		// The deadline ended the manager (its timer, or the run's clock
		// past it as the manager returned, or a resume after it) before
		// anything else did.
		c.noteDeadlineFirst(context.WithoutCancel(ctx))
	}
	if deadlinePassed {
		// The run's deadline is part of its budget.
		c.mu.Lock()
		c.exhausted = true
		c.mu.Unlock()
	}
	stop(nil)
	if stopped && driveErr != nil && errors.Is(driveErr, ErrStopped) {
		driveErr = nil
	}
	var re *kernel.RunError
	if stopped && errors.As(driveErr, &re) && re.Status == "cancelled" {
		driveErr = nil
	}

	// The brain returned: cancel live workers and give them a bounded
	// time to settle. Their reason says why the brain returned when
	// the run's deadline ended it.
	// A caller whose context ended is why, not the manager's return
	// that followed from it: the worker's settlement names the caller's
	// cause whichever of this and the watch above cancels it first.
	why := errors.New("supervise: the manager returned")
	switch cause := context.Cause(ctx); {
	case deadlinePassed:
		why = deadlineErr
	case cause != nil && errors.Is(cause, contract.ErrLeaseLost):
		why = runLost(cause)
	case cause != nil:
		why = callerEnded(cause)
	}
	c.cancelWork(why)
	waited := make(chan struct{})
	go func() { c.wg.Wait(); close(waited) }()
	timer := time.NewTimer(grace)
	select {
	case <-waited:
	case <-timer.C:
	}
	timer.Stop()

	// A process paused past the journal's lease while another resumed
	// the run has lost it: the other process settles, acknowledges and
	// delivers; this one does none of it. The lease is confirmed, fenced,
	// before anything leaves the journal, and the end record is fenced
	// too.
	if err := log.confirm(ctx); errors.Is(err, store.ErrFenced) || errors.Is(err, ErrSpawnLogLost) {
		logger.Error("supervise: the run's spawn journal was taken over; delivering nothing", "err", err)
		return SupervisedResult{}, spawnLogLost(err)
	}
	// Environments kept for continuity resume are released now that no
	// resume can follow; one whose teardown is unconfirmed is named.
	c.releaseSessions(ctx)
	res := c.finish(ctx, report, driveErr, downWhileDriving, start, now())
	res.Resumed = resumed
	c.finalizeControl(ctx, &res)
	// The outcome is durable before anyone is told of it: a process
	// killed from here on is resumed to this result, never re-run.
	// Records of state changes the journal did not take make the result
	// unreproducible from it: the result says so (JournalLossError), in
	// the finished record too, so a resume to this result says it again.
	loss := log.lossError()
	outcome := outcomeRecord(res)
	if loss != nil {
		outcome.LostCount, outcome.Lost = loss.Count, loss.Lost
	}
	fin := Record{Kind: KindFinished, Outcome: string(res.Status), Reason: string(res.Reason), Result: outcome}
	jerr := log.append(context.WithoutCancel(ctx), fin)
	if errors.Is(jerr, store.ErrFenced) || errors.Is(jerr, ErrSpawnLogLost) {
		logger.Error("supervise: the run's spawn journal was taken over at its end; delivering nothing", "err", jerr)
		return SupervisedResult{}, spawnLogLost(jerr)
	}
	runEnded(res)
	var errs []error
	if jerr != nil {
		logger.Error("supervise: journaling the end", "err", jerr)
		errs = append(errs, fmt.Errorf("%w: %w", ErrOutcomeNotJournaled, jerr))
	} else if err := record(res, outcome); err != nil {
		// Only an outcome the journal holds is recorded: one it does not
		// is driven again by a resume and may end otherwise.
		logger.Error("supervise: recording the run", "err", err)
		errs = append(errs, err)
	}
	if loss != nil {
		logger.Error("supervise: the run's journal is incomplete", "lost", loss.Count, "first_err", loss.Err)
		errs = append(errs, loss)
	}
	return res, errors.Join(errs...)
}

// hasSubmitted reports whether the run's manager submitted a result
// that passed the check.
func (c *Coordinator) hasSubmitted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.submitted != nil
}

// WaitForChildren is the Options.ChildSettleGrace that keeps live workers
// running, once the manager returned or failed on its own, until every
// one of them settled (§3.6 childSettleGraceMs null): bounded only by the
// run's deadline, a run cancellation and the caller's context.
const WaitForChildren time.Duration = math.MaxInt64

// childSettleGrace waits, after the manager returned, until the run's
// live workers settled, grace passed, the run's deadline passed or ctx
// ended (a run cancellation cancels the workers, which ends it too).
func (c *Coordinator) childSettleGrace(ctx context.Context, grace time.Duration, deadline time.Time) {
	if !deadline.IsZero() {
		grace = min(grace, deadline.Sub(c.now()))
	}
	if grace <= 0 {
		return
	}
	if live, _ := c.scope.Live(); live == 0 {
		return
	}
	var timeout <-chan time.Time // nil: wait until they settle
	if grace == WaitForChildren {
		c.logger.Info("supervise: the manager returned; waiting for its live workers to settle")
	} else {
		c.logger.Info("supervise: the manager returned; its live workers get a grace to settle", "grace", grace)
		t := time.NewTimer(grace)
		defer t.Stop()
		timeout = t.C
	}
	settled := make(chan struct{})
	go func() { c.wg.Wait(); close(settled) }()
	select {
	case <-settled:
	case <-timeout:
	case <-ctx.Done():
	}
}

// drive runs the brain, turning a panic into a driver failure.
func drive(ctx context.Context, b Brain, c *Coordinator, task string) (r BrainReport, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("supervise: the brain panicked: %v", p)
		}
	}()
	return b.Drive(ctx, c, task)
}

func (o *Options) resolve(manager *profile.Profile) (Brain, Executor, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if manager == nil {
		bad("a nil manager profile")
	}
	if !o.Resume && (o.Budget.Tokens == nil || o.Budget.Iterations == nil) {
		// A resume takes its budget from the journal (adoptJournaled).
		bad("Budget needs token and iteration ceilings")
	}
	if !o.Resume {
		// §6: a per-worker ceiling above the pool is a misconfiguration,
		// not a budget every spawn would later be refused by. A resume
		// is held to its journal's Budget and PerWorker (adoptJournaled);
		// one that finds no journal is checked as a new run below.
		if err := perWorkerFits(o.Budget, o.PerWorker); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Deliverable.Check == nil {
		bad("Deliverable.Check is required: settlement is not delivery")
	}
	if len(o.Profiles) == 0 {
		bad("Profiles names no worker profile")
	}
	if o.Resume && o.RunDir == "" && o.WorkspaceRoot == "" && o.SpawnStore == nil {
		bad("Resume needs a RunDir, a WorkspaceRoot or a SpawnStore")
	}
	if o.RunDir == "" && o.WorkspaceRoot != "" {
		switch {
		case o.Resume && o.RunID == "":
			bad("Resume in a WorkspaceRoot needs the RunID that names the run's directory")
		case o.RunID != "" && !runIDPattern.MatchString(o.RunID):
			bad("RunID %q names the run's directory under WorkspaceRoot: use letters, digits, '.', '_', ':' and '-' (at most 128)", o.RunID)
		}
	}
	if o.Resume && o.SpawnStore != nil && o.RunID == "" {
		bad("Resume from a SpawnStore needs the RunID")
	}
	switch {
	case o.MaxRestarts < 0 || o.RestartsWithin < 0:
		bad("MaxRestarts and RestartsWithin cannot be negative")
	case o.MaxRestarts > 0 && o.RestartsWithin == 0:
		bad("MaxRestarts needs RestartsWithin, the window its restarts are counted in")
	}
	if o.OnProgressStop != nil && o.StopRule == nil {
		bad("OnProgressStop needs StopRule, the rule whose stop it is told of")
	}
	if o.PeerMail != nil {
		errs = append(errs, o.PeerMail.check()...)
	}
	if o.MaxTurns < 0 {
		errs = append(errs, &OptionError{Field: "MaxTurns", Pointer: "/maxTurns",
			Reason: fmt.Sprintf("%d is negative; 0 means the kernel's backstop", o.MaxTurns)})
	}
	if o.ChildSettleGrace < 0 {
		errs = append(errs, &OptionError{Field: "ChildSettleGrace", Pointer: "/childSettleGrace",
			Reason: fmt.Sprintf("%s is negative; 0 cancels live workers at once, WaitForChildren waits for them", o.ChildSettleGrace)})
	}
	if o.StallAfter < 0 {
		errs = append(errs, &OptionError{Field: "StallAfter", Pointer: "/stallAfter",
			Reason: fmt.Sprintf("%s is negative; 0 means the default (%s)", o.StallAfter, StallAfter)})
	}
	for _, name := range slices.Sorted(maps.Keys(o.ContinuityByProfile)) {
		switch o.ContinuityByProfile[name] {
		case ContinuityFresh, continuityFreshWord, ContinuityResume:
		default:
			errs = append(errs, &OptionError{Field: "ContinuityByProfile[" + strconv.Quote(name) + "]", Pointer: "/continuityByProfile/" + pointerToken(name),
				Reason: fmt.Sprintf("continuity %q is neither fresh nor resume", o.ContinuityByProfile[name])})
		}
	}
	exec := o.Executor
	if exec == nil {
		if o.Workers == nil {
			bad("Executor or Workers is required")
		} else {
			exec = &KernelExecutor{Provider: o.Workers, Store: memory.New(o.Now)}
		}
	}
	if r, ok := exec.(UsageReporter); ok && !r.ReportsUsage() && !o.BudgetExempt {
		bad("the executor cannot report usage; set BudgetExempt to run it charged at ceilings")
	}
	errs = append(errs, checkDriverLoop(o)...)
	errs = append(errs, checkWorkerRetry(o)...)
	brain := o.Brain
	if brain == nil && manager != nil {
		switch manager.Harness {
		case "", harness.CLIBase:
			if o.Router == nil {
				bad("a cli-base manager needs Router (its chat model)")
			} else {
				rb, err := NewRouterBrain(manager, o.Router, o.MaxTurns)
				if err != nil {
					errs = append(errs, err)
				}
				brain = rb
			}
		default:
			errs = append(errs, fmt.Errorf("%w: harness %s", ErrUnsupportedHarness, manager.Harness))
		}
	}
	if len(o.ExtraTools) > 0 {
		errs = append(errs, checkExtraTools(o.ExtraTools)...)
		_, router := brain.(*RouterBrain)
		_, offers := brain.(ExtraToolsOfferer)
		if !router && !offers {
			bad("ExtraTools are offered to the router brain (a cli-base manager) or an ExtraToolsOfferer only; this run's manager is driven by %T", brain)
		}
	}
	if _, router := brain.(*RouterBrain); router && (o.Reprompt.Max > 0 || o.Reprompt.UntilComplete) {
		bad("Reprompt re-enters an external-harness manager; a cli-base manager (the router brain) runs its loop in process")
	}
	return brain, exec, errors.Join(errs...)
}

// finish settles the scope and builds the result.
func (c *Coordinator) finish(ctx context.Context, report BrainReport, driveErr error, downWhileDriving int, start, end time.Time) SupervisedResult {
	res := SupervisedResult{RunID: c.runID, BrainText: report.Text, MS: end.Sub(start).Milliseconds(), Continuation: c.Continuation()}
	if report.Metered != nil {
		// Usage the brain reported only now: charged and journaled at
		// its end (the router brain meters each turn as it happens).
		if err := c.Meter(ctx, *report.Metered); err != nil {
			c.logger.Error("supervise: metering the manager's reported usage", "err", err)
		}
	}
	driver, gap := c.driverTotal()
	if gap != nil {
		res.SpendGaps = append(res.SpendGaps, *gap)
	}
	res.TeardownUnconfirmed = c.teardownsAtEnd(ctx)
	totals := c.scope.Close()
	res.Breakdown = Breakdown{DriverInference: driver, ChildWork: totals.Spent}
	res.Spent = addTotals(driver, totals.Spent)
	res.SpendGaps = append(totals.Gaps, res.SpendGaps...)
	if len(res.SpendGaps) == 0 {
		res.SpendGaps = nil
	}

	c.mu.Lock()
	if k := c.scope.nodeCount(); k > 0 {
		res.Tree = make([]WorkerSummary, 0, k)
	}
	c.scope.eachNode(func(n *NodeInfo) {
		if n.State == StateFailed || n.State == StateCancelled || n.InDoubt || n.NeverSettled {
			res.DownCount++
		}
		res.Tree = append(res.Tree, c.summaryLocked(*n))
	})
	cands := c.candidatesLocked(res.Tree)
	ended := c.tripped != nil || c.abortWhy != ""
	c.mu.Unlock()

	cancelled := ctx.Err() != nil
	runCancel := c.appliedRunCancel()
	if ps := c.progress.stop(); ps != nil {
		// The stop rule ended the run before anything else did (it reads
		// only while nothing had): a cancellation that came after, while
		// the workers settled, does not make it cancelled or aborted (the
		// first end decides). The run ends as a stopped manager's does.
		res.ProgressStop = ps
		cancelled, runCancel = false, nil
	}
	ruleFailed, downAtFailure := c.progress.failure()
	if ruleFailed != nil {
		// The stop rule failed while the manager drove: the run ends
		// driver-failed with it (outranked by the lifecycle causes
		// below, and by a worker down before it failed), and no
		// finalizer picks a winner.
		driveErr, downWhileDriving = ruleFailed, downAtFailure
	}
	var winner *Winner
	if !ended && runCancel == nil && !cancelled && ruleFailed == nil {
		// The finalizer picks among the candidates only for a run no
		// lifecycle cause ended (it runs outside c.mu: it is the
		// caller's code). Its failure is the brain's: driver-failed
		// unless a lifecycle cause outranks it.
		var ferr error
		winner, res.FinalizerNote, ferr = c.finalize(ctx, cands, res.Tree)
		if ferr != nil && driveErr == nil {
			driveErr = ferr
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if k := res.Continuation; k != nil {
		// What closed the driver loop (the reference's closedBy and
		// stopReason), read under mu.
		switch ps := c.progress.stop(); {
		case c.submitted != nil:
			k.ClosedBy = ClosedByResultAccepted
		case c.stopped:
			k.ClosedBy, k.StopReason = ClosedByStop, clip(c.stopWhy, MaxReasonBytes)
		case ps != nil:
			k.ClosedBy, k.StopReason = ClosedByStopRule, ps.Reason
		}
	}
	switch {
	case c.tripped != nil:
		// The trip, journaled when it happened, is the run's end: a
		// tripped breaker outranks the abort it raised (children kept
		// going down), and the cancellations that followed it.
		res.Status, res.Reason = StatusNoWinner, ReasonAllChildrenDown
		trip := *c.tripped
		res.Breaker = &trip
	case c.deadlineFirst && (c.abortWhy != "" || runCancel != nil || cancelled):
		// The deadline ended the run first: an abort or a cancellation
		// after it does not make it aborted or cancelled (the first end
		// decides, as the reference's classification does).
		res.Status, res.Reason = StatusNoWinner, ReasonBudgetExhausted
	case c.abortWhy != "":
		res.Status, res.Reason = StatusNoWinner, ReasonAborted
	case runCancel != nil:
		res.Status, res.Reason = StatusNoWinner, ReasonCancelled
		res.Cancellation = &Cancellation{Source: runCancel.Source, Reason: runCancel.Reason, OperationID: runCancel.OperationID}
	case cancelled:
		// The caller's context is the Go form of the reference's caller
		// abort signal (options.signal), which ends a run "aborted";
		// "cancelled" is a CancelRun request's, with its source and
		// operation id. Cancellation still names the context and its
		// cause, so the run reads as interrupted (OutcomeRecord.Interrupted).
		res.Status, res.Reason = StatusNoWinner, ReasonAborted
		res.Cancellation = &Cancellation{Source: CancelSourceContext, Reason: context.Cause(ctx).Error()}
	case winner != nil:
		res.Status, res.Winner = StatusWinner, winner
	case c.exhausted || errors.Is(driveErr, ledger.ErrExhausted) || budgetStop(driveErr):
		res.Status, res.Reason = StatusNoWinner, ReasonBudgetExhausted
	case driveErr != nil && downWhileDriving == 0:
		res.Status, res.Reason = StatusNoWinner, ReasonDriverFailed
		res.Error = &DriverError{Name: errorName(driveErr), Message: driveErr.Error()}
	default:
		res.Status, res.Reason = StatusNoWinner, ReasonAllChildrenDown
	}
	switch res.Reason {
	case ReasonAllChildrenDown, ReasonBudgetExhausted, ReasonDriverFailed:
	default:
		res.FinalizerNote = "" // a lifecycle cause that came meanwhile ended the run
	}
	return res
}

// downCount counts the tree's nodes that went down (failed, cancelled or
// in doubt) so far.
func (c *Coordinator) downCount() int {
	n := 0
	c.scope.eachNode(func(node *NodeInfo) {
		if node.State == StateFailed || node.State == StateCancelled || node.InDoubt {
			n++
		}
	})
	return n
}

// callerEnded is the cause a worker is cancelled with when the caller's
// context of its run ended with cause: the caller named, and its cause
// kept (errors.Is still matches context.Canceled or the caller's own).
func callerEnded(cause error) error {
	return fmt.Errorf("supervise: the run's caller ended its context: %w", cause)
}

// errRunDeadline is the manager's context's cause when the run's
// deadline ended it.
var errRunDeadline = fmt.Errorf("supervise: the run's deadline passed: %w", ledger.ErrDeadline)

// noteDeadlineFirst records, once, that the run's deadline ended it
// before any abort or cancellation, and journals it (KindDeadlinePassed).
func (c *Coordinator) noteDeadlineFirst(ctx context.Context) {
	if c.appliedRunCancel() != nil {
		return // a run cancellation came first
	}
	if c.progressStopped() {
		return // the stop rule ended the run first
	}
	c.mu.Lock()
	if c.deadlineFirst || c.cancelJournaled || c.tripped != nil || c.abortWhy != "" {
		c.mu.Unlock()
		return
	}
	c.deadlineFirst = true
	c.mu.Unlock()
	if err := c.log.appendOrLose(ctx, Record{Kind: KindDeadlinePassed}); err != nil {
		c.logger.Error("supervise: journaling the deadline's end", "err", err)
	}
}

// ErrBudgetStop marks a brain that stopped because the run's budget (or
// its deadline) left it nothing to do: the router brain's loop stopped
// before a turn it could not pay for, an external harness's turn ended
// once its metered calls spent the pool. A run whose brain returns an
// error wrapping it ends no-winner budget-exhausted (behaviour 42), not
// driver-failed; a caller-owned brain may return it too.
var ErrBudgetStop = errors.New("supervise: the manager stopped: budget or deadline")

func budgetStop(err error) bool { return errors.Is(err, ErrBudgetStop) }

// errorName is a driver-failed result's error.name (§3.6 error{name,
// message}): the name of the first exported error type along err's
// chain — its Go type name without package or pointer, as a
// TypeScript class name reads (StopRuleError, DriverAttemptsError) —
// or "Error" when the chain holds only anonymous errors (errors.New,
// fmt.Errorf, errors.Join), the reference's name for a plain Error.
// A kernel.RunError with a cause is a carrier, not the cause: it is
// looked through.
// The walk follows single and joined unwrapping depth first and visits
// at most maxErrorNameDepth errors, so a hostile chain cannot hold it.
func errorName(err error) (name string) {
	// An error's Unwrap is the caller's code: one that panics (a typed
	// nil whose method dereferences it) names nothing rather than
	// failing the run's result.
	defer func() {
		if recover() != nil {
			name = "Error"
		}
	}()
	const maxErrorNameDepth = 64
	stack := []error{err}
	for seen := 0; len(stack) > 0 && seen < maxErrorNameDepth; seen++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		re, carrier := e.(*kernel.RunError)
		if carrier && re == nil {
			return "RunError" // a typed nil: nothing to unwrap
		}
		if !carrier || re.Cause == nil {
			if name := exportedTypeName(e); name != "" {
				return name
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			kids := u.Unwrap()
			for i := len(kids) - 1; i >= 0; i-- {
				stack = append(stack, kids[i])
			}
		case interface{ Unwrap() error }:
			stack = append(stack, u.Unwrap())
		}
	}
	return "Error"
}

// exportedTypeName is e's dynamic type name without package or
// pointer when that name is exported, else "".
func exportedTypeName(e error) string {
	t := reflect.TypeOf(e)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name := t.Name(); name != "" && token.IsExported(name) {
		return name
	}
	return ""
}

func addTotals(a, b SpentTotal) SpentTotal {
	out := SpentTotal{Tokens: a.Tokens + b.Tokens, Iterations: a.Iterations + b.Iterations, MicroUSD: a.MicroUSD + b.MicroUSD,
		Resources: map[string]int64{}, TokensKnown: a.TokensKnown && b.TokensKnown,
		IterationsKnown: a.IterationsKnown && b.IterationsKnown, USDKnown: a.USDKnown && b.USDKnown}
	for _, m := range []map[string]int64{a.Resources, b.Resources} {
		for k, v := range m {
			out.Resources[k] += v
		}
	}
	return out
}

// BrainFunc adapts a function to Brain: a caller-owned brain.
type BrainFunc func(ctx context.Context, c *Coordinator, task string) (BrainReport, error)

// Drive calls f.
func (f BrainFunc) Drive(ctx context.Context, c *Coordinator, task string) (BrainReport, error) {
	return f(ctx, c, task)
}

// spawnLogLost is err as the ErrSpawnLogLost Supervise returns.
func spawnLogLost(err error) error {
	if errors.Is(err, ErrSpawnLogLost) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrSpawnLogLost, err)
}

// runLost is err, why the run stopped being this process's (its store
// journal's lease taken over or run out unrenewed, or its caller's
// context ended with a cause matching contract.ErrLeaseLost), as the
// cause its brain and workers are cancelled with: it matches
// ErrSpawnLogLost and contract.ErrLeaseLost, and unwraps to err. A
// worker's kernel run then ends as one whose own lease was lost —
// recorded interrupted, not cancelled — its environment is not
// destroyed, and its provider leaves the turn running (a remote one
// does not cancel it on the server): the run's next holder may be
// recovering that very execution. A lease that ran out while the
// journal's store did not answer is such a loss too: past it another
// process may have taken the run over, which this one cannot tell.
func runLost(err error) error { return &runLostError{err: spawnLogLost(err)} }

// runLostError is runLost's cause.
type runLostError struct{ err error }

func (e *runLostError) Error() string { return e.err.Error() }

// Is makes errors.Is(err, contract.ErrLeaseLost) match; ErrSpawnLogLost
// matches through Unwrap.
func (e *runLostError) Is(target error) bool { return target == contract.ErrLeaseLost }

// Unwrap returns the loss as Supervise returns it (ErrSpawnLogLost).
func (e *runLostError) Unwrap() error { return e.err }

package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// Coordinator is a live supervised run as one manager's brain sees it:
// the coordination verbs as Go methods (Spawn, Await, Observe, Steer,
// Submit, Stop, ReadJournal) and as tools (Tools). A Brain drives it;
// every method is safe for concurrent use. The root manager's
// Coordinator is the one Supervise makes; a nested manager's is a view
// of the same run bound to its node (Self; see IsManagerProfile).
type Coordinator struct {
	*core
	// self is the manager this view serves: the run's root, or a worker
	// that is itself a manager (a nested manager); parent is its
	// parent manager's view, nil for the root.
	self   NodeID
	parent *Coordinator
	// reserved is a nested manager's node's reservation, which its
	// brain's turns are held to (turnGate).
	reserved reservation

	// workCtx is the parent of the context of every worker this manager
	// starts; cancelWork ends them when its brain returns (a nested
	// manager's is its own worker context, so cancelling it cascades to
	// its subtree).
	workCtx    context.Context
	cancelWork context.CancelCauseFunc

	// What follows is this manager's own, guarded by core.mu: the events
	// of its children not yet returned by Await, by kind, each in
	// recorded order (see eventQueue); inflight counts its children
	// started whose settlement is not yet queued; held counts the events
	// PutBackUnreturned calls took and have not yet returned or put back;
	// wake wakes its Await.
	queued    map[string]*eventQueue
	queuedSeq int64
	inflight  int
	held      int
	wake      chan struct{}
	// submitted is its first passing submit_result; stopped, stopWhy and
	// stopFn are its stop; rootInbox holds the steers addressed to it
	// (nil unless its brain reads an inbox: ManagerInbox); meter is its
	// brain's own inference so far.
	submitted *Winner
	// submitting is set while a passing result's record is journaled:
	// no other submission is taken meanwhile.
	submitting bool
	stopped    bool
	// returned is set once its brain's Drive returned (what follows —
	// ChildSettleGrace, the run's end — is no longer its driving).
	returned bool
	stopWhy  string
	stopFn   context.CancelCauseFunc
	// brainCtx is its brain's context, set with stopFn: once it ended,
	// Await answers stopped.
	brainCtx  context.Context
	rootInbox *Inbox
	// reoffered counts the steers reofferSteers queued whose
	// acknowledgement is not yet written; closeManagerInbox waits for
	// them.
	reoffered sync.WaitGroup
	// rootSteers counts the in-process root steers (Steer) under way,
	// from before their request is journaled until their
	// acknowledgement is; closeManagerInbox waits for them, so a steer
	// the manager's last turn took is acknowledged in the journal
	// before the run ends and closes it.
	rootSteers callGate
	meter      meter
	// turnObs is a nested manager's worker observer (its log and
	// progress), under its TurnMeter; kids are the done channels of the
	// children it started, joined when its brain returns.
	turnObs kernel.Observer
	kids    []chan struct{}
	// rerunCalls are the calls of this manager's recorded transcript
	// that no recorded tool message answers (setRerunCalls): its own,
	// so a nested manager resumed beside the root does not replace the
	// root's, nor the root its: each re-run call claims its own in-doubt
	// child or journaled outcome (core.mu;
	// TestNestedRerunSpawnClaimsItsOwnInDoubtChild,
	// TestResolveSupervisorToolsNestedCallActsOnceAcrossResume).
	rerunCalls map[string]bool
	// ownTools is this manager's product tools, resolved once
	// (NodeTools).
	ownTools nodeTools
}

// core is the state of a supervised run that every manager's view
// (Coordinator) shares: one scope over one pool, one journal, one
// worker table.
type core struct {
	// mail is the run's peer mail post office (Options.PeerMail), nil
	// when off.
	mail     *postOffice
	runID    string
	scope    *Scope
	pool     *ledger.Pool
	log      *runLog
	exec     Executor
	profiles map[string]*profile.Profile
	// authoredOK is Options.AuthoredProfiles; authorizeHook says an
	// AuthorizeSpawn hook decides what an authored profile may run.
	authoredOK    bool
	authorizeHook bool
	check         Deliverable
	// finalizer and finalizerTimeout are Options.Finalizer and
	// FinalizerTimeout; authorizeMessage is Options.AuthorizeMessage.
	finalizer        Finalizer
	finalizerTimeout time.Duration
	authorizeMessage func(ctx context.Context, m DownMessage) (string, error)
	// escalateQuestion is Options.EscalateQuestion.
	escalateQuestion func(ctx context.Context, q Question) (EscalationOutcome, error)
	escalateTimeout  time.Duration
	// watch is Options.WatchWorkers (nil: no worker is watched);
	// watchRaised counts, per worker, the online findings earlier
	// processes of a resumed run raised (c.mu).
	watch       *WatchWorkers
	watchRaised map[NodeID]int
	logger      *slog.Logger
	now         func() time.Time
	// stallAfter is Options.StallAfter, the default when it is 0;
	// continuityByProfile is Options.ContinuityByProfile (both read
	// only once the run started).
	stallAfter          time.Duration
	continuityByProfile map[string]Continuity
	// workerRetry and onWorkerRetry are Options.WorkerRetry and
	// Options.OnWorkerRetry (executeRetrying).
	workerRetry   WorkerRetry
	onWorkerRetry func(WorkerRetryAttempt)

	wg sync.WaitGroup

	// spawnMu orders admission with its journal record, and settlement
	// with its record, so the journal's order is the scope's.
	spawnMu sync.Mutex
	// delivery runs what follows each settlement's record (its delivery
	// to Await first of all) in the journal's order; settleAs takes its
	// turn under spawnMu.
	delivery sequencer

	mu      sync.Mutex
	workers map[NodeID]*worker
	// unstarted says, by node, why a node left in doubt has no worker:
	// its spawn record's append had an unknown outcome (unadmit).
	unstarted map[NodeID]string
	questions []*question
	// questionSeq is the highest question number used ("q<n>"): a
	// resumed run's journal may lack a record an earlier number's
	// question had, so ids follow it, not the count of questions.
	questionSeq int
	// questionsByID indexes questions by id, in the order asked (an
	// earlier process's ids may repeat); appendQuestionLocked keeps both.
	questionsByID map[string][]*question
	// questionsTo holds each manager's questions (question.to), in the
	// order asked: what its list_questions pages through.
	questionsTo map[NodeID][]*question
	// teardowns are the settled workers whose teardown is unconfirmed.
	teardowns []UnconfirmedTeardown
	replay    map[string][]NodeID // canonical request → settled journaled nodes not yet claimed
	// replayInDoubt holds, by canonical request, the journaled unkeyed
	// nodes pruned from replay in doubt with their execution bound (it
	// may still run): only the manager's spawn_worker
	// call that made one, run again because its result was not
	// journaled, claims it (claimInDoubtReplay); any other call spawns
	// anew.
	replayInDoubt map[string][]NodeID
	// escalatedCalls are the root's escalations an earlier process
	// journaled, by the tool call that made them (replayQuestions): that
	// call, run again, gets its outcome back (rerunEscalation).
	escalatedCalls map[string]EscalationRecord
	// cancelDown is, per worker cancellation an earlier process
	// journaled the request of, the nodes of its target's subtree the
	// journal shows ending down after it, in order (replayRecords): an
	// open request applied again names them (checkWorkerCancels).
	cancelDown map[string][]NodeID
	exhausted  bool
	// breaker is the restart-intensity breaker (nil when off); tripped
	// is its trip and abortWhy a caller's abort (RootHandle.Abort), once
	// either ended the run, here or in the journal an earlier process
	// left (mu).
	breaker  *restartBreaker
	tripped  *BreakerTrip
	abortWhy string
	// deadlineFirst: the run's deadline ended its manager before any
	// abort or cancellation did (journaled, KindDeadlinePassed), so the
	// run is budget-exhausted whatever came after (mu).
	deadlineFirst bool
	// cancelJournaled: the journal an earlier process left holds a run
	// cancellation request and no deadline end before it (mu).
	cancelJournaled bool
	// progress is the run's no-progress bound (Options.StopRule; its
	// rule nil when none), and how it ended the run.
	progress *progressRule
	// extraTools are the root manager's extra tools (Options.ExtraTools);
	// extraStarted and extraDone the calls of them journaled started and
	// ended, by tool and call id (mu).
	extraTools   []contract.Tool
	extraStarted map[string]bool
	extraDone    map[string]extraOutcome
	// resolveTools is Options.ResolveSupervisorTools; manager is the
	// root manager's profile, what the resolver is told of the root.
	resolveTools func(ctx context.Context, node NodeContext) ([]SupervisorTool, error)
	manager      *profile.Profile

	// ctl serves the run dir's steer and cancel files (nil without a
	// run dir).
	ctl *control
	// obs calls Options.Observer; nil when it is not set.
	obs *observing

	// lenses is the analyst menu and analysts marks the workers that are
	// analysts (both guarded by mu); afterSettle is Options.AfterSettle.
	lenses      *lensMenu
	analysts    map[NodeID]analystOf
	afterSettle func(ctx context.Context, c *Coordinator, s Settled)
	// requested holds the keys of the analyses journaled as requested;
	// intents and hooksOpen are what a resumed run's journal left
	// unfinished (see resumeAnalyses). Guarded by spawnMu (requested)
	// and mu.
	requested map[string]bool
	intents   []analysisIntent
	hooksOpen []NodeID
	// analystModel runs analysts with their lens's trace tools
	// (Options.AnalystModel; nil: analysts run on the Executor), and
	// analystStops says what cut an analyst short: a lens limit, or its
	// loop's own stop (mu).
	analystModel contract.ChatModel
	analystStops map[NodeID]string
	// steers counts in-process steer_agent calls (operation ids).
	steers int
	// recovering holds the replayed workers left without a settlement
	// whose execution the journal names, until recoverInDoubt (mu).
	recovering []recoverable
	// recoverTimeout is Options.RecoverTimeout.
	recoverTimeout time.Duration

	// root is the run's root manager's view; views holds every nested
	// manager's (mu), made when it starts or when a resumed run's journal
	// names one of its children.
	root  *Coordinator
	views map[NodeID]*Coordinator
	// router, maxTurns and managerBrain choose a nested manager's brain
	// (Options.Router, MaxTurns, ManagerBrain); settleGrace bounds how
	// long a nested manager's children get to settle once its brain
	// returned (Options.SettleGrace).
	router       contract.ChatModel
	maxTurns     int
	managerBrain func(p *profile.Profile) Brain
	settleGrace  time.Duration
	// redrive holds, in admission order, the nested managers a resumed
	// run's journal left live: they are driven again under their ids
	// (drivers are replay-safe), their settled children replayed.
	redrive []NodeID
	// reattach holds the nested managers driven again whose keyed spawn
	// the resumed brain has not repeated yet (mu).
	reattach map[NodeID]bool
	// driverLoop is Options.DriverRetry, Reprompt and OnDriverAttempt,
	// and the attempts DriveAttempts recorded (mu).
	driverLoop *driverLoop
}

// worker is what the coordinator knows of one node beyond the scope.
type worker struct {
	id   NodeID
	task string
	// profile is the profile it runs, when this process knows it (an
	// authored one re-read from the journal on resume).
	profile   *profile.Profile
	cancel    context.CancelCauseFunc
	text      string
	output    canonjson.Value
	outRef    string
	verdict   *kernel.Verdict
	delivered bool
	checkErr  string
	reason    string
	replayed  bool
	session   string // the provider session it left (WorkResult.Session)
	execution string // the execution its executor bound it to (Work.Bind)
	inbox     *Inbox // nil unless the executor reads inboxes
	runtime   string // RuntimeOf its executor
	done      chan struct{}
	started   time.Time

	// settling: its settlement is being made (checked, stored, settled
	// in the scope) and its settled record is not yet durable. What a
	// manager reads of it (observe_agent, Reentry) still shows it
	// running until the record is journaled, as Await does: the manager
	// never acts on a settlement a crash would take back. Guarded by
	// c.mu; set before its result fields are written.
	settling bool
	// recovered: settled from its journaled execution (Recoverer);
	// progress is nil for a worker this process did not run; paged is
	// the settled value observe_agent last paged through.
	recovered bool
	progress  *progress
	paged     *pagedValue

	// sessionRef is where the session it left can be continued from
	// (WorkResult.SessionRef), nil when unknown.
	sessionRef *SessionRef
}

// Event kinds Await returns.
const (
	EventSettled  = "settled"
	EventQuestion = "question"
)

// Event is what Await returns: a settlement (in recorded order) or a
// question a worker asked.
type Event struct {
	Kind     string    `json:"kind"`
	WorkerID NodeID    `json:"workerId"`
	Question *Question `json:"question,omitzero"`
	Label    string    `json:"label,omitzero"`
	State    State     `json:"state,omitzero"`
	// Delivered is set on a settlement: whether the check passed.
	Delivered *bool           `json:"delivered,omitzero"`
	Verdict   *kernel.Verdict `json:"verdict,omitzero"`
	OutRef    string          `json:"outRef,omitzero"`
	Output    string          `json:"output,omitzero"`
	Reason    string          `json:"reason,omitzero"`
	Replayed  bool            `json:"replayed,omitzero"`
	// Lens and Source are set on a finding: the lens the analyst ran and
	// the worker it analysed.
	Lens   string `json:"lens,omitzero"`
	Source NodeID `json:"sourceWorkerId,omitzero"`
}

// ErrStopped: the brain called Stop; nothing more is admitted.
var ErrStopped = errors.New("supervise: the manager stopped")

// SpawnArgs are spawn_worker's arguments.
type SpawnArgs struct {
	// Profile names a registered worker profile. On the wire, profile
	// may instead be an authored AgentProfile object, decoded into
	// AuthoredProfile (see Options.AuthoredProfiles).
	Profile string `json:"profile" jsonschema:"the worker profile's name, or an authored AgentProfile object when the supervisor accepts them"`
	// AuthoredProfile is an authored AgentProfile document; when set,
	// Profile is ignored.
	AuthoredProfile json.RawMessage `json:"-"`
	Task            string          `json:"task" jsonschema:"the worker's task"`
	Label           string          `json:"label,omitzero" jsonschema:"names the worker among its siblings"`
	Key             string          `json:"key,omitzero" jsonschema:"idempotency key: the same key with the same request replays"`
	Continuity      string          `json:"continuity,omitzero" jsonschema:"fresh (default) or resume"`
	Budget          *SpawnBudget    `json:"budget,omitzero" jsonschema:"per-spawn budget, merged per field over the per-worker default"`
	Parent          NodeID          `json:"parent,omitzero" jsonschema:"the spawning node: the root when empty, else a nested manager's node (a nested manager spawns under its own node only)"`
}

// SpawnBudget is a spawn's requested ceiling; an absent field takes the
// per-worker default. Its members are spelled as the spec's Budget
// (§2.1: maxTokens, maxIterations, maxUsd), as a TypeScript peer's
// spawn_worker call spells them.
type SpawnBudget struct {
	Tokens     *int64   `json:"maxTokens,omitzero"`
	Iterations *int64   `json:"maxIterations,omitzero"`
	USD        *float64 `json:"maxUsd,omitzero" jsonschema:"US dollars"`
}

// SpawnResult is an admitted spawn (spawn_worker's reply).
type SpawnResult struct {
	WorkerID   NodeID `json:"workerId"`
	Assignment string `json:"assignment"`
	// AssignmentID is Assignment under the reference's name, and
	// Continuity the spawn's continuity (fresh or resume): a TypeScript
	// peer reads spawn_worker's reply as {workerId, assignmentId,
	// continuity, live, freeSlots}.
	AssignmentID string  `json:"assignmentId"`
	Continuity   string  `json:"continuity"`
	Resumed      Resumed `json:"resumed,omitzero"`
	PriorWorker  NodeID  `json:"priorWorkerId,omitzero"`
	PriorReason  string  `json:"priorReason,omitzero"`
	Replayed     bool    `json:"replayed,omitzero"`
	// InDoubt: the replayed worker is in doubt (a resumed manager's
	// call, run again, got back the child its earlier process spawned,
	// which started without a terminal receipt): its outcome is unknown,
	// it is neither completed nor live, and await_event reports it
	// inDoubt. Resumed is then empty.
	InDoubt   bool `json:"inDoubt,omitzero"`
	Live      int  `json:"live"`
	FreeSlots *int `json:"freeSlots"`
}

func (c *Coordinator) refusal(code Code, cause, detail string) *Refusal {
	live, free := c.scope.Live()
	return &Refusal{Code: code, Cause: cause, Detail: detail, Live: live, FreeSlots: free}
}

// stoppedRefusal is the refusal of a spawn after this manager stopped,
// nil before.
func (c *Coordinator) stoppedRefusal() error {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return c.refusal(CodeScopeSettled, "stopped", "the manager stopped")
	}
	return nil
}

// Spawn admits a worker through the scope, journals it and starts it on
// the executor; the worker is settled and checked in the background
// (Await returns its settlement). A refusal is a *Refusal; nothing was
// reserved or journaled. On a resumed run, a spawn that repeats a
// journaled, settled one (same request, or same key) returns that worker
// without running it again.
func (c *Coordinator) Spawn(ctx context.Context, a SpawnArgs) (SpawnResult, error) {
	if err := c.stoppedRefusal(); err != nil {
		return SpawnResult{}, err
	}
	req := SpawnRequest{Parent: a.Parent, Label: a.Label, Profile: a.Profile, Task: a.Task, Key: a.Key, Continuity: Continuity(a.Continuity)}
	if c.parent != nil {
		// A nested manager spawns under its own node only: the parent is
		// who calls, never what the model says.
		if a.Parent != "" && a.Parent != c.self {
			return SpawnResult{}, c.refusal(CodeInvalidIdentity, "not-own-parent", "a nested manager spawns its own children only ("+string(c.self)+")")
		}
		req.Parent = c.self
	} else if a.Parent != "" && a.Parent != c.self {
		// The root spawns under itself or under a nested manager, whose
		// brain reads its children's settlements and questions. Under a
		// plain worker nothing would: the child would be funded from the
		// worker's reservation while its settlement and questions queued
		// for a brain that does not exist, and the root's await_event
		// would answer idle while it ran. An unknown parent is the
		// scope's refusal (unknown-parent).
		if _, known := c.scope.Node(a.Parent); known && !c.runsManager(a.Parent) {
			return SpawnResult{}, c.refusal(CodeInvalidIdentity, "parent-not-manager",
				string(a.Parent)+" is a worker, not a nested manager: nothing would read its child's settlement; spawn under the root (leave parent out)")
		}
	}
	var p *profile.Profile
	var doc canonjson.Value
	if a.AuthoredProfile != nil {
		au, err := c.checkAuthored(a.AuthoredProfile)
		if err != nil {
			return SpawnResult{}, err
		}
		p, doc = au.p, au.doc
		req.Profile, req.ProfileDigest, req.Authored = authoredName, au.digest, au.p
		if au.p.Name != nil && *au.p.Name != "" {
			req.Profile = *au.p.Name
		}
	} else {
		var ok bool
		if p, ok = c.profiles[a.Profile]; !ok {
			return SpawnResult{}, c.refusal(CodeInvalidIdentity, "unknown-profile", "no worker profile named "+strconv.Quote(a.Profile))
		}
	}
	if p.Model != nil && p.Model.Default != nil {
		req.Model = *p.Model.Default
	}
	// A call that names no continuity takes its profile's default
	// (Options.ContinuityByProfile); a resume so defaulted spawns fresh
	// when its label has no worker to answer it (below, under spawnMu).
	defaulted := a.Continuity == "" && c.continuityByProfile[req.Profile] == ContinuityResume
	if defaulted {
		req.Continuity = ContinuityResume
	}
	// The scope holds the model a worker runs by default to
	// AllowedModels; the models its profile hides (model.small, a seat,
	// a subagent, a mode) run too, so they are held here.
	if m, bad := disallowedModel(p, c.scope.opts.AllowedModels); bad && m.Pointer != "/model/default" {
		return SpawnResult{}, c.refusal(CodeInvalidIdentity, "model-not-allowed",
			"/profile"+m.Pointer+": model "+strconv.Quote(m.Model)+" is not one of "+strings.Join(c.scope.opts.AllowedModels, ", "))
	}
	// A worker whose profile declares coordination verbs is a manager
	// itself (nested.go).
	mexec, err := c.managerExecFor(p)
	if err != nil {
		return SpawnResult{}, err
	}
	if a.Budget != nil {
		req.Budget = ledger.Budget{Tokens: a.Budget.Tokens, Iterations: a.Budget.Iterations}
		if u := a.Budget.USD; u != nil {
			if *u < 0 || *u > 1e9 {
				return SpawnResult{}, c.refusal(CodePreflightRefused, "invalid-budget", "budget.maxUsd out of range")
			}
			micro := int64(*u*1e6 + 0.5)
			req.Budget.MicroUSD = &micro
		}
	}

	c.spawnMu.Lock()
	if req.Key == "" {
		id, ok := c.claimReplay(req)
		inDoubt := false
		if !ok {
			id, ok = c.claimInDoubtReplay(ctx, req)
			inDoubt = ok
		}
		if ok {
			c.spawnMu.Unlock()
			info, _ := c.scope.Node(id)
			live, free := c.scope.Live()
			assignment := "replay:" + strconv.Itoa(info.Seq)
			// The continuity the journaled spawn resolved to, not this
			// call's: a defaulted resume's first spawn was fresh. A
			// journal written before spawns recorded it holds no
			// ResumeOf; the call's explicit resume stands for it.
			cont := continuityWord(ContinuityFresh)
			if info.ResumeOf != "" || Continuity(a.Continuity) == ContinuityResume {
				cont = continuityWord(ContinuityResume)
			}
			res := SpawnResult{WorkerID: id, Assignment: assignment, AssignmentID: assignment, Continuity: cont,
				Resumed: ResumedCompleted, Replayed: true, Live: live, FreeSlots: free}
			switch {
			case inDoubt:
				// Neither completed nor live: its outcome is unknown (the
				// reference refuses a keyed spawn of such a child in-doubt;
				// this call made it, so it is named, in doubt).
				res.Resumed, res.InDoubt = "", true
			case info.State.Live():
				res.Resumed = "" // a nested manager driven again (redriveManagers)
			}
			return res, nil
		}
	}
	if defaulted && req.Key == "" && !c.scope.resumable(req.Parent, labelOf(req.Label, req.Profile)) {
		// The declared default with nothing to resume: its label's first
		// spawn, fresh (the reference's resolveContinuity). A keyed one
		// stays resume, refused resume-with-key as the reference's is.
		req.Continuity = ContinuityFresh
	}
	var runtime string
	if mexec != nil {
		runtime = RuntimeManager
	}
	var reply SpawnReply
	var tk *logTicket
	if c.scope.opts.AuthorizeSpawn != nil { // err is nil here
		// The caller's hook decides without spawnMu: the other workers'
		// settlements and verbs go on while it does (for up to
		// DefaultAuthorizeSpawnTimeout). A spawn that replays a journaled
		// one was answered above without it, and the scope checks its
		// fences again when it admits.
		c.spawnMu.Unlock()
		err = c.scope.authorizeFirst(ctx, req)
		c.spawnMu.Lock()
	}
	if err == nil {
		// A stop made since the check above (while the hook decided, or
		// the replay was looked up) admits nothing more: Stop takes
		// spawnMu, so none lands between this and the admission (the
		// scope's own fences, abort and close, admit checks).
		err = c.stoppedRefusal()
	}
	if err == nil {
		reply, tk, err = c.admitQueued(ctx, req, doc, runtime, true)
	} else {
		err = c.spawnRefused(req, err)
	}
	c.spawnMu.Unlock()
	if err == nil {
		// The spawn record's place is fixed; its fsync is shared with
		// the spawns and settlements queued meanwhile. Nothing of the
		// spawn is visible, and nothing runs, until it is durable.
		err = c.commitAdmitted(ctx, reply, tk)
	}
	if err != nil {
		if id, ok := c.reattachKeyed(req, err); ok {
			// The key's nested manager, driven again by this resumed run.
			live, free := c.scope.Live()
			return SpawnResult{WorkerID: id, Assignment: "key:" + req.Key, AssignmentID: "key:" + req.Key, Continuity: continuityWord(req.Continuity),
				Replayed: true, Live: live, FreeSlots: free}, nil
		}
		return SpawnResult{}, err
	}
	cont := ContinuityFresh
	if reply.ResumeOf != "" {
		cont = ContinuityResume
	}
	out := SpawnResult{WorkerID: reply.Node, Assignment: reply.Assignment, AssignmentID: reply.Assignment, Continuity: continuityWord(cont), Resumed: reply.Resumed,
		PriorWorker: reply.PriorWorker, PriorReason: reply.PriorReason, Live: reply.Live, FreeSlots: reply.FreeSlots}
	if reply.Resumed == ResumedCompleted {
		return out, nil // the key's committed result; nothing runs
	}
	c.start(reply.Node, p, req.Task, reply.Reserved, mexec)
	return out, nil
}

// admit admits req through the scope and journals the spawn; c.spawnMu
// is held. A key's committed result is returned unjournaled (nothing
// runs); a refusal is returned as is, and a spawn it cannot journal is
// released and returned as an error.
//
// doc is an authored profile's document, journaled with its digest so
// a resumed run can run the same profile again. authorized says the
// caller had req through Scope.authorizeFirst, without spawnMu
// (AuthorizeSpawn is not asked again); otherwise the hook is asked here,
// with spawnMu held.
func (c *Coordinator) admit(ctx context.Context, req SpawnRequest, doc canonjson.Value, authorized bool) (SpawnReply, error) {
	return c.admitAs(ctx, req, doc, "", authorized)
}

// admitAs is admit of a worker that runs on runtime: RuntimeManager,
// journaled on its spawn record, marks a nested manager; "" any other.
func (c *Coordinator) admitAs(ctx context.Context, req SpawnRequest, doc canonjson.Value, runtime string, authorized bool) (SpawnReply, error) {
	reply, tk, err := c.admitQueued(ctx, req, doc, runtime, authorized)
	if err != nil {
		return SpawnReply{}, err
	}
	if tk == nil {
		return reply, nil
	}
	if err := tk.commit(ctx); err != nil {
		return SpawnReply{}, c.unadmit(reply.Node, err)
	}
	return reply, nil
}

// spawnRefused is err, a spawn's refusal, after noting what it says of
// the run: a pool that ran out ends the run budget-exhausted; a dollar
// request under a root without a dollar ceiling (usd-unbudgeted) ran
// nothing out: the fix is to budget the root, and the run's end says
// what else happened. A nested manager's carved pool running out
// (carve.go) is its own, not the run's.
func (c *Coordinator) spawnRefused(req SpawnRequest, err error) error {
	var r *Refusal
	if errors.As(err, &r) && r.Code == CodeBudgetExhausted && !c.scope.carvedFor(req.Parent) {
		c.mu.Lock()
		c.exhausted = true
		c.mu.Unlock()
	}
	return err
}

// admitQueued is admitAs up to the spawn record's place in the journal:
// c.spawnMu is held, and the caller commits the returned ticket (nil for
// a key's committed result, which journals nothing) with
// commitAdmitted once it released spawnMu, so the journal's order is the
// scope's while concurrent spawns and settlements share fsyncs.
//
// authorized says the caller already had the request through
// Scope.authorizeFirst (AuthorizeSpawn is not asked again).
func (c *Coordinator) admitQueued(ctx context.Context, req SpawnRequest, doc canonjson.Value, runtime string, authorized bool) (SpawnReply, *logTicket, error) {
	var reply SpawnReply
	var err error
	if authorized {
		reply, err = c.scope.admit(req)
	} else {
		reply, err = c.scope.SpawnContext(ctx, req)
	}
	if err != nil {
		return SpawnReply{}, nil, c.spawnRefused(req, err)
	}
	if reply.Resumed == ResumedCompleted {
		return reply, nil, nil
	}
	rec := Record{Kind: KindSpawned, Node: reply.Node, Parent: parentOf(reply.Node, c.scope.Root()), Label: req.Label,
		Profile: req.Profile, Model: req.Model, Key: req.Key, Task: req.Task, Reserved: budgetRecord(reply.Reserved),
		ProfileDigest: req.ProfileDigest, ProfileDoc: doc, Runtime: runtime}
	if reply.ResumeOf != "" {
		// The continuity the spawn resolved to, so a resume replays the
		// decision rather than resolving it again over a later state.
		rec.Continuity, rec.ResumeOf = string(ContinuityResume), reply.ResumeOf
	}
	if b := req.Budget; b.Tokens != nil || b.Iterations != nil || b.MicroUSD != nil || b.Resources != nil {
		rec.Budget = budgetRecord(req.Budget)
	}
	tk := c.log.enqueue(ctx, rec)
	if tk.err != nil {
		return SpawnReply{}, nil, c.unadmit(reply.Node, tk.err)
	}
	return reply, tk, nil
}

// commitAdmitted waits for an admitted spawn's record (tk, nil when
// nothing was journaled) to be durable; c.spawnMu is not held. A spawn
// not journaled is released and its error returned.
func (c *Coordinator) commitAdmitted(ctx context.Context, reply SpawnReply, tk *logTicket) error {
	if tk == nil {
		return nil
	}
	if err := tk.commit(ctx); err != nil {
		c.spawnMu.Lock()
		defer c.spawnMu.Unlock()
		return c.unadmit(reply.Node, err)
	}
	return nil
}

// unadmit undoes the admission of a spawn that could not be journaled
// (not durable, so not started): Scope.forget releases its reservation
// and takes it out of the tree, so nothing happened. A record a store
// may have taken after all (store.ErrUnknownOutcome) cannot be undone
// so: the node stays, in doubt, as a resume reading that record would
// find it — charged its ceiling, its id and key spent (a later spawn
// under the key is refused in-doubt), so that no later spawn is
// journaled under its id or key. It returns err with what undoing it
// failed with; c.spawnMu is held.
func (c *Coordinator) unadmit(node NodeID, err error) error {
	if errors.Is(err, store.ErrUnknownOutcome) {
		if ierr := c.scope.MarkInDoubt(node); ierr != nil {
			err = errors.Join(err, ierr)
		}
		c.mu.Lock()
		if c.unstarted == nil {
			c.unstarted = map[NodeID]string{}
		}
		c.unstarted[node] = "never started: whether the store took its spawn record is unknown (" + err.Error() + "); it is charged its ceiling"
		c.mu.Unlock()
		return err
	}
	if ferr := c.scope.forget(node); ferr != nil {
		err = errors.Join(err, ferr)
	}
	return err
}

func zeroSpend() ledger.Spend {
	z, n := int64(0), int64(0)
	return ledger.Spend{Tokens: &z, Iterations: &n, MicroUSD: &z}
}

func parentOf(id, root NodeID) NodeID {
	p, ok := id.Parent()
	if !ok || p == root {
		return ""
	}
	return p
}

// claimReplay returns a journaled, settled node of a resumed run whose
// request equals req and that this process has not handed out yet.
func (c *Coordinator) claimReplay(req SpawnRequest) (NodeID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replay) == 0 {
		return "", false // not resumed: spare the key
	}
	k := replayKey(req)
	ids := c.replay[k]
	if len(ids) == 0 {
		return "", false
	}
	c.replay[k] = ids[1:]
	return ids[0], true
}

// ReplaysSpawn reports whether Spawn(ctx, a), called now, would replay
// a spawn the resumed run's journal holds rather than start a worker: a
// keyless call naming a registered profile whose parent, label,
// profile and task are those of a journaled spawn not replayed yet (or,
// for the manager's re-run call on ctx, of one left in doubt). It
// claims nothing. A layer that refuses new spawns past a limit of its
// own — a graph's spent edge cap, restored from the journal — asks it
// so that the replays of the spawns that spent the limit go through.
func (c *Coordinator) ReplaysSpawn(ctx context.Context, a SpawnArgs) bool {
	if a.AuthoredProfile != nil || a.Key != "" {
		return false
	}
	req := SpawnRequest{Parent: a.Parent, Label: a.Label, Profile: a.Profile, Task: a.Task}
	if c.parent != nil {
		req.Parent = c.self
	}
	k := replayKey(req)
	call := kernel.ToolCallID(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replay[k]) > 0 {
		return true
	}
	return call != "" && c.rerunCalls[call] && len(c.replayInDoubt[k]) > 0
}

// claimInDoubtReplay returns the journaled node, in doubt, that the
// spawn_worker call running on ctx made in an earlier process: a call of
// the manager's recorded transcript that no recorded tool message
// answered (rerunCalls, by kernel.ToolCallID), run again exactly as
// made, replays its child rather than spawn it again (the child's
// execution may still run).
func (c *Coordinator) claimInDoubtReplay(ctx context.Context, req SpawnRequest) (NodeID, bool) {
	k := replayKey(req)
	call := kernel.ToolCallID(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.replayInDoubt[k]
	if len(ids) == 0 || call == "" || !c.rerunCalls[call] {
		return "", false
	}
	delete(c.rerunCalls, call)
	c.replayInDoubt[k] = ids[1:]
	return ids[0], true
}

// setRerunCalls notes the calls of recorded, a resumed manager's
// journaled transcript, that no tool message of it answers: the calls
// its tool loop runs again (claimInDoubtReplay).
func (c *Coordinator) setRerunCalls(recorded []contract.ChatMessage) {
	open := map[string]bool{}
	for _, m := range recorded {
		switch m.Role {
		case contract.ChatAssistant:
			for _, tc := range m.ToolCalls {
				open[tc.ID] = true
			}
		case contract.ChatTool:
			delete(open, m.ToolCallID)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rerunCalls = open
}

func replayKey(req SpawnRequest) string {
	return fmt.Sprintf("%q %q %q %q %q", req.Parent, req.Label, req.Profile, req.ProfileDigest, req.Task)
}

// start runs an admitted worker in the background, on exec (nil: the
// run's Executor).
func (c *Coordinator) start(id NodeID, p *profile.Profile, task string, reserved ledger.Budget, exec Executor) {
	if exec == nil {
		exec = c.exec
	}
	wctx, cancel := context.WithCancelCause(c.workCtx)
	if _, ok := exec.(*nestedManager); ok {
		// A nested manager's children run under its own context, made
		// now, before any child of it can start (a resumed run starts a
		// manager's nested managers right after it).
		v := c.viewOf(id)
		c.mu.Lock()
		v.workCtx, v.cancelWork = context.WithCancelCause(wctx)
		c.mu.Unlock()
	}
	w := &worker{id: id, task: task, profile: p, cancel: cancel, done: make(chan struct{}), started: c.now(), runtime: RuntimeOf(exec),
		progress: newProgress(c.now, profileModel(p))}
	box := c.viewFor(id) // the manager its settlement and questions go to
	if r, ok := exec.(InboxReader); ok && r.ReadsInbox() {
		w.inbox = newInbox(id, c.log.dir, c.now, c.logger)
		if w.runtime == RuntimeManager {
			// A nested manager driven again posts to its projection.
			w.inbox.continueSeq(context.Background())
		}
	}
	c.mu.Lock()
	c.workers[id] = w
	box.inflight++
	if box.parent != nil {
		box.kids = append(box.kids, w.done) // joined when its brain returns
	}
	c.mu.Unlock()
	// An executor that reports acquiring moves the node on (Work.Acquiring).
	var acquiring, running func()
	if acquires(exec) {
		acquiring, running = c.phaseHooks(id)
	} else if err := c.scope.Transition(id, StateRunning); err != nil {
		c.logger.Warn("supervise: worker did not start running", "node", id, "err", err)
	}
	var observer kernel.Observer
	info, _ := c.scope.Node(id)
	info.Runtime = w.runtime
	if c.obs != nil {
		wctx, observer = c.obs.nodeStarted(wctx, info)
		// Spec §10: a backend without a trace channel journals
		// trace-unpropagated, once: start runs once per node.
		if gap := traceGap(exec); gap != "" {
			if err := c.log.appendOrLose(context.WithoutCancel(wctx), Record{Kind: KindTraceUnpropagated, Node: id, Reason: gap}); err != nil {
				c.logger.Error("supervise: journaling an unpropagated trace", "node", id, "err", err)
			}
		}
	}
	// The worker's turns and events go to its log, workers/<label>.ndjson.
	observer = c.log.streams.workerObserver(id, WorkerLogStem(labelOf(info.Label, info.Profile)), observer)
	observer = w.progress.observer(observer)
	observer = c.watchFor(id, exec, observer)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(w.done)
		defer cancel(nil)
		if acquiring != nil {
			// The executor moves its worker through acquiring (and a
			// kernel turn starting means it runs).
			observer = turnRunning{passObserver: passObserver{observer}, running: running}
			exec = phased{Executor: exec, c: c, id: id, acquiring: acquiring, running: running}
		}
		var (
			askMu   sync.Mutex
			askOpen int // the worker's questions awaiting a decision
		)
		ask := func(ctx context.Context, q AskArgs) (Decision, error) {
			q.From = id
			// A worker asking waits on its parent: waiting until the
			// decision comes (observe_agent, state.json say so), then
			// running again — once its last open question is decided,
			// when it asks several at once. A node that ended meanwhile
			// stays ended.
			askMu.Lock()
			if askOpen++; askOpen == 1 {
				if err := c.scope.Transition(id, StateWaiting); err != nil {
					c.logger.Debug("supervise: a worker asked while not running", "node", id, "err", err)
				}
			}
			askMu.Unlock()
			d, err := box.Ask(ctx, q)
			askMu.Lock()
			if askOpen--; askOpen == 0 {
				if info, _ := c.scope.Node(id); info.State == StateWaiting {
					if terr := c.scope.Transition(id, StateRunning); terr != nil {
						c.logger.Debug("supervise: a worker's question was decided while it ended", "node", id, "err", terr)
					}
				}
			}
			askMu.Unlock()
			return d, err
		}
		res, err := c.executeRetrying(wctx, exec, Work{RunID: c.runID, Node: id, Profile: p, Task: task, Reserved: reserved, Ask: ask, Observer: observer, Inbox: w.inbox,
			Bind: c.bind(id), PeerMail: c.peerMailTools(id)})
		w.inbox.close(wctx) // the worker takes no more turns
		if c.afterSettle == nil {
			c.settle(wctx, w, res, err)
			return
		}
		// The hook may start more work (an analyst): until it returned,
		// the run counts as busy, so await_event does not answer idle.
		c.mu.Lock()
		box.inflight++
		c.mu.Unlock()
		defer box.releaseInflight()
		c.settle(wctx, w, res, err)
		c.afterSettled(wctx, w)
		c.hookDone(wctx, id)
	}()
}

// execute calls the executor, turning a panic into a failure.
func (c *Coordinator) execute(ctx context.Context, exec Executor, w Work) (res WorkResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.logger.Error("supervise: executor panicked", "node", w.Node, "panic", p, "stack", string(debug.Stack()))
			res, err = WorkResult{}, &InfraError{Err: fmt.Errorf("supervise: executor panicked: %v", p)}
		}
	}()
	w.ResumeOf, w.ResumeSession, w.ResumeRef = c.resumeOf(w.Node)
	if m, ok := exec.(*nestedManager); ok {
		return c.runManager(ctx, m, w)
	}
	return exec.Execute(ctx, w)
}

// resumeOf is the settled worker a continuity-resume node continues and
// the provider session that worker left, with where it can be continued
// from; "", "", nil for a fresh node.
func (c *Coordinator) resumeOf(id NodeID) (NodeID, string, *SessionRef) {
	info, ok := c.scope.Node(id)
	if !ok || info.ResumeOf == "" {
		return "", "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prior := c.workers[info.ResumeOf]; prior != nil {
		return info.ResumeOf, prior.session, checkedRef(prior.sessionRef)
	}
	return info.ResumeOf, "", nil
}

// settle runs the completion gate on a finished worker, stores its
// result, settles it in the scope and journals the settlement.
func (c *Coordinator) settle(ctx context.Context, w *worker, res WorkResult, execErr error) {
	state, reason := StateDone, ""
	switch {
	case execErr != nil && ctx.Err() != nil:
		state, reason = StateCancelled, clip(context.Cause(ctx).Error(), MaxReasonBytes)
	case execErr != nil:
		state, reason = StateFailed, clip(execErr.Error(), MaxReasonBytes)
	}
	// Only a failure can be the infrastructure's: a cancellation is the
	// caller's decision.
	c.settleAs(ctx, w, res, state, reason, state == StateFailed && IsInfra(execErr))
}

// settleAs is settle of a worker whose end is known: state and reason,
// and whether a failure was its infrastructure's.
func (c *Coordinator) settleAs(ctx context.Context, w *worker, res WorkResult, state State, reason string, infraFailure bool) {
	w.progress.settled()
	c.mu.Lock()
	an, isAnalyst := c.analysts[w.id]
	w.settling = true
	c.mu.Unlock()
	defer c.settled(w) // also on the early return below
	if isAnalyst && len(res.Text) > an.limit {
		res.Text = clip(res.Text, an.limit)
		c.mu.Lock()
		if c.analystStops[w.id] == "" {
			c.analystStops[w.id] = "stopped at the lens's maxOutputChars limit"
		}
		c.mu.Unlock()
	}
	w.text, w.output, w.reason = res.Text, res.Output, reason
	session := res.Session
	if len(session) > MaxSessionIDLen {
		session = "" // unknown rather than a clipped id naming another session
	}
	// What follows outlives a cancelled worker.
	bg := context.WithoutCancel(ctx)
	if state == StateDone && !isAnalyst {
		// Settlement is not delivery: only the independent check passing
		// delivers. A check that errors or panics does not deliver: its
		// verdict is not passed (§15 behaviour 41: valid only when the
		// check resolved exactly true), CheckError saying why.
		v, err := c.runCheck(bg, Output{Node: w.id, Text: res.Text, Value: res.Output})
		switch {
		case err != nil:
			w.checkErr = clip(err.Error(), MaxReasonBytes)
			w.verdict = &kernel.Verdict{Passed: false, Reason: w.checkErr}
		default:
			v.Reason = clip(v.Reason, MaxReasonBytes)
			w.verdict, w.delivered = &v, v.Passed
		}
	}
	var outRef string
	if state == StateDone {
		ref, err := c.log.putBlob(bg, resultValue(res.Text, res.Output))
		var be *BlobError
		switch {
		case errors.As(err, &be) && be.Limit > 0:
			// A result over the bound is the worker's outcome, not a
			// loss of the journal's: settled, never delivered.
			w.delivered = false
			w.checkErr = clip("the result is not kept: "+err.Error(), MaxReasonBytes)
			ref = ""
		case err != nil:
			// A result that is not stored cannot be delivered: a resume
			// would find its settlement and no text behind it.
			c.logger.Error("supervise: storing a result", "node", w.id, "err", err)
			c.log.lose("result-blob", w.id, err)
			if w.delivered {
				w.delivered = false
				w.checkErr = clip("the result passed its check but could not be stored: "+err.Error(), MaxReasonBytes)
			}
			ref = ""
		}
		outRef = ref
	}
	c.spawnMu.Lock()
	st, err := c.scope.Settle(w.id, Result{State: state, Spent: res.Spent, Reason: reason})
	if err != nil {
		c.logger.Warn("supervise: settling a worker", "node", w.id, "err", err)
		var te *TransitionError
		if errors.As(err, &te) || errors.Is(err, ErrScopeClosed) {
			c.spawnMu.Unlock()
			box := c.viewFor(w.id)
			c.mu.Lock()
			box.inflight--
			c.mu.Unlock()
			return
		}
	}
	c.mu.Lock()
	w.outRef, w.session, w.sessionRef = outRef, session, checkedRef(res.SessionRef)
	c.mu.Unlock()
	infra := st.State == StateFailed && infraFailure
	rec := Record{Kind: KindSettled, Node: w.id, State: st.State, Spent: spendRecord(st.Spent), OutRef: outRef,
		Verdict: w.verdict, Delivered: w.delivered, Reason: reason, CheckError: w.checkErr, Hook: c.afterSettle != nil, Infra: infra,
		Recovered: w.recovered}
	rec.Session, rec.SessionRef = session, checkedRef(res.SessionRef)
	if res.TeardownUnconfirmed != "" {
		rec.TeardownUnconfirmed, rec.Runtime = clip(res.TeardownUnconfirmed, MaxTeardownDetail), w.runtime
	}
	progressed := c.progress.rule != nil && c.isRootChild(w.id)
	if progressed {
		// A worker of the root manager: a reading of the run's progress
		// (Options.StopRule), in the journal's order, its time kept so
		// that a resume reads the same history.
		at := c.now()
		rec.AtMS = at.UnixMilli()
		var score *float64
		if w.verdict != nil {
			score = w.verdict.Score
		}
		c.progress.noteSettled(sample(w.id, at, st.State, w.delivered, score))
	}
	// The settlement's place in the journal and its turn to be delivered
	// are fixed together, under spawnMu, in the scope's order; its fsync
	// is shared with the spawns and settlements queued meanwhile, and
	// what follows (delivery to Await included) runs in that order, once
	// the record is durable.
	tk := c.log.enqueue(bg, rec)
	turn := c.delivery.take()
	trip := c.countDown(w.id, st.State)
	c.spawnMu.Unlock()
	journaled := tk.commitOrLose(bg)
	if journaled != nil {
		c.logger.Error("supervise: journaling a settlement", "node", w.id, "err", journaled)
	}
	// Durable (or its loss recorded): a manager may read it now.
	c.settled(w)
	if trip != nil {
		// Before the settlement that tripped it is delivered: the
		// manager that sees it already finds the scope aborted.
		c.tripBreaker(bg, trip)
	} else if progressed {
		// So is the no-progress bound's reading of it.
		c.checkProgress(bg)
	}
	c.delivery.wait(turn)
	defer c.delivery.done(turn)
	c.environmentTeardowns(bg, w.id, res.Teardowns)
	if res.TeardownUnconfirmed != "" {
		c.teardownUnconfirmed(bg, w.id, w.runtime, st.State, res.TeardownUnconfirmed)
	}
	if isAnalyst {
		c.recordFinding(bg, w, an, st.State, outRef)
	}
	if c.obs != nil {
		info, _ := c.scope.Node(w.id)
		info.Runtime = w.runtime
		c.obs.nodeSettled(bg, NodeSettled{Node: info, State: st.State, Reason: reason, Spent: res.Spent, Usage: res.Usage, Infra: infra,
			ServedModel: res.ServedModel, Delivered: w.delivered, Verdict: w.verdict, OutRef: outRef, Duration: ranFor(c.now(), w.started)})
	}
	c.publish(w, st.State, journaled)
	c.cancelObserved(ctx, w.id, st.State)
}

// workContext is the context this manager's work runs under
// (workCtx): Background for a view not yet driven, which has none.
func (c *Coordinator) workContext() context.Context {
	if c.workCtx == nil {
		return context.Background()
	}
	return c.workCtx
}

// settled ends w's settling: what a manager reads of it shows its
// settlement.
func (c *Coordinator) settled(w *worker) {
	c.mu.Lock()
	w.settling = false
	c.mu.Unlock()
}

// publish queues w's settlement for Await; journaled is its record's
// append error. A settlement whose record was refused because this
// process no longer holds the run (ErrSpawnLogLost) is not queued: it
// is not the run's — the run's next holder executes that worker again —
// and a manager must not act on it. Its waiters are woken all the same.
func (c *Coordinator) publish(w *worker, state State, journaled error) {
	info, _ := c.scope.Node(w.id)
	box := c.viewFor(w.id)
	c.mu.Lock()
	defer c.mu.Unlock()
	box.inflight--
	if errors.Is(journaled, ErrSpawnLogLost) {
		box.wakeLocked()
		return
	}
	box.pushLocked(c.settledEventLocked(w, info, state))
}

// settledEventLocked is w's settlement as Await returns it: a finding
// for an analyst; c.mu is held.
func (c *Coordinator) settledEventLocked(w *worker, info NodeInfo, state State) Event {
	ev := Event{Kind: EventSettled, WorkerID: w.id, Label: labelOf(info.Label, info.Profile), State: state,
		Delivered: new(w.delivered), Verdict: w.verdict, OutRef: w.outRef, Output: clip(w.text, 4000), Reason: w.reason, Replayed: w.replayed}
	if a, ok := c.analysts[w.id]; ok {
		ev.Kind, ev.Lens, ev.Source = EventFinding, a.lens, a.source
	}
	return ev
}

// pushLocked queues ev and wakes every waiter; c.mu is held.
func (c *Coordinator) pushLocked(ev Event) {
	if c.queued == nil {
		c.queued = map[string]*eventQueue{}
	}
	q := c.queued[ev.Kind]
	if q == nil {
		q = &eventQueue{}
		c.queued[ev.Kind] = q
	}
	q.push(c.queuedSeq, ev)
	c.queuedSeq++
	c.wakeLocked()
}

// wakeLocked wakes every Await waiting for an event, so that it looks
// again; c.mu is held.
func (c *Coordinator) wakeLocked() {
	close(c.wake)
	c.wake = make(chan struct{})
}

// takeLocked removes and returns the earliest queued event of one of
// kinds (any kind when empty); c.mu is held. Every event Await returns
// is the earliest of its kind, so each kind's queue is taken from its
// head only, and a call costs the number of kinds — never the number
// of events queued of kinds it does not want.
func (c *Coordinator) takeLocked(kinds []string) (Event, bool) {
	ev, _, ok := c.takeSeqLocked(kinds)
	return ev, ok
}

// takeSeqLocked is takeLocked, also returning the event's place in the
// recorded order, which untake needs to put it back.
func (c *Coordinator) takeSeqLocked(kinds []string) (Event, int64, bool) {
	var best *eventQueue
	consider := func(q *eventQueue) {
		if q != nil && q.len() > 0 && (best == nil || q.headSeq() < best.headSeq()) {
			best = q
		}
	}
	if len(kinds) == 0 {
		for _, q := range c.queued {
			consider(q)
		}
	} else {
		for _, k := range kinds {
			consider(c.queued[k])
		}
	}
	if best == nil {
		return Event{}, 0, false
	}
	seq := best.headSeq()
	return best.pop(), seq, true
}

// queuedBesides counts the queued events of the kinds not in kinds, by
// kind; nil when kinds is empty (a call for any kind took the first) or
// nothing else waits.
func (c *Coordinator) queuedBesides(kinds []string) map[string]int {
	if len(kinds) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[string]int
	for k, q := range c.queued {
		if q != nil && q.len() > 0 && !slices.Contains(kinds, k) {
			if out == nil {
				out = map[string]int{}
			}
			out[k] = q.len()
		}
	}
	return out
}

// untake puts back an event Await took (seq its place in the recorded
// order) whose taker never handed it on — a router manager's call the
// tool loop could not record (its context ended) — so that the next
// await returns it: a taken question is never lost with its call.
func (c *Coordinator) untake(ev Event, seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.untakeLocked(ev, seq)
}

// untakeLocked is untake with c.mu held.
func (c *Coordinator) untakeLocked(ev Event, seq int64) {
	if c.queued == nil {
		c.queued = map[string]*eventQueue{}
	}
	q := c.queued[ev.Kind]
	if q == nil {
		q = &eventQueue{}
		c.queued[ev.Kind] = q
	}
	q.unpop(seq, ev)
	c.wakeLocked()
}

// PutBackUnreturned wraps the await_event tool t (from Tools) for a
// manager that is handed each call's result directly, with no
// transcript of its own — an external harness calling the verbs over
// MCP (package coordmcp). The event a call took counts as taken only
// when the call returns it, without error, while its context is still
// live; a call that fails, or whose context ended first (the caller
// cancelled it or went away, so a result returned now reaches no one),
// puts the event back in its recorded place (untake), and the next
// await_event returns it. Such a call then fails with the context's
// cause, so that no result claims the event. Until a call returned or
// put back its event, a concurrent await_event waits for it rather than
// answering idle: the caller's cancel may reach the server after its
// next call does. Any other tool is returned as it is. The router
// brain instead keeps an event until its transcript recorded the result
// (transcriptJournal.awaiting).
func (c *Coordinator) PutBackUnreturned(t contract.Tool) contract.Tool {
	if t.Name != ToolPrefix+VerbAwaitEvent || t.Run == nil {
		return t
	}
	run := t.Run
	t.Run = func(ctx context.Context, args canonjson.Value) (v canonjson.Value, err error) {
		note := &awaitNote{hold: true}
		returned := false
		defer func() {
			if note.took {
				// Also when run panicked: the event is not lost with it.
				c.settleHeld(note.ev, note.seq, returned)
			}
		}()
		v, err = run(context.WithValue(ctx, awaitNoteKey{}, note), args)
		if !note.took {
			return v, err
		}
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("supervise: await_event's caller is gone, its event put back: %w", context.Cause(ctx))
		}
		if err != nil {
			return canonjson.Value{}, err
		}
		returned = true
		return v, nil
	}
	return t
}

// settleHeld ends the hold of an event a PutBackUnreturned call took:
// returned, it is the caller's; otherwise it goes back in its recorded
// place. Either way a waiting Await looks again.
func (c *Coordinator) settleHeld(ev Event, seq int64, returned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held--
	if !returned {
		c.untakeLocked(ev, seq) // wakes
		return
	}
	c.wakeLocked()
}

// eventQueue is a FIFO of one kind's events with their recorded order.
// Taken events are dropped from its head; the backing array is reused
// once half of it was taken, so memory follows what is queued, at
// amortized constant cost per event.
type eventQueue struct {
	seqs   []int64
	events []Event
	head   int
}

func (q *eventQueue) len() int       { return len(q.events) - q.head }
func (q *eventQueue) headSeq() int64 { return q.seqs[q.head] }

func (q *eventQueue) push(seq int64, ev Event) {
	if q.head > 0 && q.head*2 >= len(q.events) {
		n := copy(q.events, q.events[q.head:])
		copy(q.seqs, q.seqs[q.head:])
		clear(q.events[n:])
		q.events, q.seqs, q.head = q.events[:n], q.seqs[:n], 0
	}
	q.seqs = append(q.seqs, seq)
	q.events = append(q.events, ev)
}

// unpop puts ev, taken from q with sequence seq, back in its place:
// the head, unless events recorded before it are still queued.
func (q *eventQueue) unpop(seq int64, ev Event) {
	i := q.head
	for i < len(q.events) && q.seqs[i] < seq {
		i++
	}
	if i == q.head && q.head > 0 {
		q.head--
		q.seqs[q.head], q.events[q.head] = seq, ev
		return
	}
	q.seqs = slices.Insert(q.seqs, i, seq)
	q.events = slices.Insert(q.events, i, ev)
}

func (q *eventQueue) pop() Event {
	ev := q.events[q.head]
	q.events[q.head] = Event{}
	q.head++
	return ev
}

// MaxReasonBytes bounds the free text of a settlement that the journal
// keeps (a failure's reason, a check's error, a verdict's reason): a
// longer one is clipped, marked with "…", so that a worker's 2 MiB error
// cannot make its settlement too large to journal.
const MaxReasonBytes = 4096

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func resultValue(text string, out canonjson.Value) canonjson.Value {
	ms := []canonjson.Member{{Name: "text", Value: canonjson.StringValue(text)}}
	if out.IsValid() {
		ms = append(ms, canonjson.Member{Name: "output", Value: out})
	}
	return canonjson.ObjectValue(ms)
}

func (c *Coordinator) runCheck(ctx context.Context, out Output) (kernel.Verdict, error) {
	limit := c.check.Timeout
	if limit <= 0 {
		limit = DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	a, answered := callHook(cctx, func(ctx context.Context) (kernel.Verdict, error) { return c.check.Check(ctx, out) })
	switch {
	case !answered && ctx.Err() != nil:
		// The run ended (cancelled, its deadline), not the check's time.
		return kernel.Verdict{}, fmt.Errorf("supervise: the deliverable check was cut short: %w", context.Cause(ctx))
	case !answered:
		return kernel.Verdict{}, fmt.Errorf("supervise: the deliverable check did not answer within %s", limit)
	case a.panic != nil:
		return kernel.Verdict{}, fmt.Errorf("supervise: the deliverable check panicked: %v", a.panic)
	case a.err == nil && a.v.Score != nil && (math.IsNaN(*a.v.Score) || math.IsInf(*a.v.Score, 0)):
		// Not a score any finalizer can rank, nor any journal keep.
		return kernel.Verdict{}, fmt.Errorf("supervise: the deliverable check returned the non-finite score %v", *a.v.Score)
	}
	return a.v, a.err
}

// AwaitArgs are await_event's arguments.
type AwaitArgs struct {
	// Kinds, when set, limits the events returned (settled, question,
	// finding); the others stay queued. Any other kind is refused
	// invalid-kind.
	Kinds []string `json:"kinds,omitzero" jsonschema:"event kinds to wait for: settled, question, finding (default: any)"`
	// TimeoutMS bounds the wait (default DefaultAwaitTimeout, at most
	// MaxAwaitTimeout). A negative one asks to wait without a bound
	// (§9's "≤0 = unbounded"): it waits MaxAwaitTimeout, the longest
	// wait, within the run's own deadline — every wait here has one. In
	// Go, zero is the field left out (the default); in a tool call's
	// JSON, where omitted and 0 differ, an explicit 0 is unbounded too
	// (UnmarshalJSON reads it as -1).
	TimeoutMS int64 `json:"timeoutMs,omitzero" jsonschema:"how long to wait, in milliseconds; 0 or negative: as long as allowed (10 minutes); default 45000"`
}

// UnmarshalJSON decodes await_event's arguments as a tool call gives
// them, refusing unknown members: an explicit "timeoutMs": 0 is §9's
// unbounded wait (TimeoutMS -1), not the omitted default.
func (a *AwaitArgs) UnmarshalJSON(data []byte) error {
	type plain AwaitArgs
	var in struct {
		plain
		TimeoutMS *int64 `json:"timeoutMs"` // shadows plain's: given or not
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		return err
	}
	*a = AwaitArgs(in.plain)
	if ms := in.TimeoutMS; ms != nil {
		a.TimeoutMS = *ms
		if *ms == 0 {
			a.TimeoutMS = -1
		}
	}
	return nil
}

// AwaitResult is await_event's reply: the next settlement, or idle (no
// live worker and nothing queued), or pending (the wait ran out while
// workers are live), or stopped (the manager's run is settling: it
// stopped, was cancelled, ran out of time, or its brain returned; an
// event already queued is still returned first). It always carries
// FreeSlots. Idle, pending and stopped answers name the manager's
// workers in doubt (InDoubt): started by an earlier process of the run,
// with no terminal record, and not recovered — they will never settle,
// and observe_agent says why.
type AwaitResult struct {
	Event   *Event `json:"event,omitzero"`
	Idle    bool   `json:"idle,omitzero"`
	Pending bool   `json:"pending,omitzero"`
	Stopped bool   `json:"stopped,omitzero"`
	// Reason says, on a stopped answer, why the run is settling.
	Reason  string   `json:"reason,omitzero"`
	Live    []NodeID `json:"live,omitzero"`
	InDoubt []NodeID `json:"inDoubt,omitzero"`
	// Queued counts, on an idle or pending answer to a call that named
	// kinds, the events of the other kinds still queued, by kind: idle
	// means nothing of the kinds asked for will come, not that nothing
	// waits (a settlement queued behind a wait for questions).
	Queued    map[string]int `json:"queued,omitzero"`
	FreeSlots *int           `json:"freeSlots"`
}

// checkAwaitKinds refuses an await_event kind that is not one (§9:
// settled, question, finding), naming its index: a misspelt kind
// matches no event, so the call would wait out its whole timeout and
// answer idle or pending while the events it meant stayed queued.
func checkAwaitKinds(kinds []string) error {
	for i, k := range kinds {
		switch k {
		case EventSettled, EventQuestion, EventFinding:
		default:
			return &VerbRefusal{Code: "invalid-kind", Reason: fmt.Sprintf("/kinds/%d: %q is not an event kind: give settled, question or finding, or leave kinds out for any", i, clip(k, 64))}
		}
	}
	return nil
}

// Await bounds.
const (
	DefaultAwaitTimeout = 45 * time.Second
	MaxAwaitTimeout     = 10 * time.Minute
)

// awaitBound is how long an await asked to wait ms milliseconds waits
// (see AwaitArgs.TimeoutMS: 0 is the field left out).
func awaitBound(ms int64) time.Duration {
	if ms == 0 {
		return AwaitWait(nil)
	}
	f := float64(ms)
	return AwaitWait(&f)
}

// AwaitWait is how long an await_event whose timeoutMs is ms waits
// (§9): nil (omitted) DefaultAwaitTimeout, a positive one that many
// milliseconds up to MaxAwaitTimeout, and 0 or a negative one
// ("unbounded") MaxAwaitTimeout, the longest wait (within the run's
// own deadline). A relay in front of the run bounds its call with it.
func AwaitWait(ms *float64) time.Duration {
	switch {
	case ms == nil || math.IsNaN(*ms):
		return DefaultAwaitTimeout
	case *ms > 0:
		return time.Duration(min(*ms, float64(MaxAwaitTimeout.Milliseconds()))) * time.Millisecond
	}
	return MaxAwaitTimeout
}

// Await returns the next settlement not yet returned, in recorded order,
// waiting at most the bounded timeout. Once the manager's brain context
// has ended (stop, a run cancel, the run's deadline, its caller, or its
// brain returned) it waits no more: with nothing queued it answers
// stopped at once, a wait already under way included — a harness's
// await_event in flight beside its stop call does not run out its
// timeout. A wait whose own ctx ended fails with its cause, unless the
// brain's context has ended too (a brain's call under its own context):
// then it answers as the ended brain's wait does.
func (c *Coordinator) Await(ctx context.Context, a AwaitArgs) (AwaitResult, error) {
	if err := checkAwaitKinds(a.Kinds); err != nil {
		return AwaitResult{}, err
	}
	d := awaitBound(a.TimeoutMS)
	// The timer is made only when Await has to wait: an event already
	// queued is returned without one.
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if lost := c.log.heldErr(); lost != nil {
			// The run is no longer this process's: nothing it queued
			// is the manager's to act on any more.
			return c.settlingAnswer(lost), nil
		}
		c.mu.Lock()
		if ev, seq, ok := c.takeSeqLocked(a.Kinds); ok {
			c.currentQuestionLocked(&ev)
			if n, _ := ctx.Value(awaitNoteKey{}).(*awaitNote); n != nil {
				n.ev, n.seq, n.took = ev, seq, true
				if n.hold {
					c.held++
				}
			}
			c.mu.Unlock()
			_, free := c.scope.Live()
			return AwaitResult{Event: &ev, FreeSlots: free}, nil
		}
		wake, inflight, held, brain := c.wake, c.inflight, c.held, c.brainCtx
		c.mu.Unlock()
		var ended <-chan struct{}
		if brain != nil {
			if brain.Err() != nil {
				return c.settlingAnswer(context.Cause(brain)), nil
			}
			ended = brain.Done()
		}
		if inflight == 0 && held == 0 {
			// Nothing runs and nothing is about to be queued, or put
			// back by a call whose caller went away. (A node the scope
			// still counts live is in doubt or was never started.)
			_, free := c.scope.Live()
			return AwaitResult{Idle: true, InDoubt: c.inDoubtIDs(), Queued: c.queuedBesides(a.Kinds), FreeSlots: free}, nil
		}
		if timer == nil {
			timer = time.NewTimer(d)
		}
		select {
		case <-wake:
		case <-ended:
			// Look once more for a queued event, then answer stopped.
		case <-timer.C:
			_, free := c.scope.Live()
			return AwaitResult{Pending: true, Live: c.liveIDs(), InDoubt: c.inDoubtIDs(), Queued: c.queuedBesides(a.Kinds), FreeSlots: free}, nil
		case <-ctx.Done():
			if brain != nil && brain.Err() != nil {
				// The brain's own call, under its context (or one
				// derived from it): both ends of the wait came at once,
				// and the run settling is the answer, as it is to an
				// await made once the brain ended — whichever of the
				// two the wait saw first.
				continue
			}
			return AwaitResult{}, context.Cause(ctx)
		}
	}
}

// currentQuestionLocked makes a question event ev say what its question
// is now (its status), as list_questions does, rather than what it was
// when asked: an asker that stopped waiting left it expired, the root's
// own ask that reached no parent is expired or escalated. The event in
// the queue is a snapshot taken at the ask.
func (c *Coordinator) currentQuestionLocked(ev *Event) {
	if ev.Kind != EventQuestion || ev.Question == nil {
		return
	}
	for _, q := range c.questionsByID[ev.Question.ID] {
		if q.to == c.self && q.From == ev.Question.From {
			qq := *ev.Question
			qq.Status = q.Status
			ev.Question = &qq
		}
	}
}

// settlingAnswer is Await's answer once the manager's brain context
// has ended with cause, or this process lost the run's journal:
// stopped, saying why, with the workers still live (they are being
// cancelled) and those in doubt.
func (c *Coordinator) settlingAnswer(cause error) AwaitResult {
	why := "the run is ending"
	var rc *RunCancelledError
	switch {
	case errors.Is(cause, ErrSpawnLogLost):
		why = "this process no longer holds the run (" + cause.Error() + "); its next holder goes on with it"
	case errors.Is(cause, ErrStopped):
		why = "the manager stopped"
	case errors.As(cause, &rc):
		why = "the run was cancelled"
		if rc.Reason != "" {
			why += ": " + rc.Reason
		}
	case errors.Is(cause, context.DeadlineExceeded):
		why = "the run's deadline passed"
	case cause != nil && !errors.Is(cause, context.Canceled):
		why = cause.Error()
	}
	_, free := c.scope.Live()
	return AwaitResult{Stopped: true, Reason: clip(why+"; its live workers are cancelled and no more events will be waited for", MaxReasonBytes),
		Live: c.liveIDs(), InDoubt: c.inDoubtIDs(), FreeSlots: free}
}

// inDoubtIDs are this manager's workers in doubt, in admission order.
func (c *Coordinator) inDoubtIDs() []NodeID {
	var out []NodeID
	for _, n := range c.scope.Nodes() {
		if n.InDoubt && (c.parent == nil || n.Parent == c.self) {
			out = append(out, n.ID)
		}
	}
	return out
}

func (c *Coordinator) liveIDs() []NodeID {
	var out []NodeID
	for _, n := range c.scope.Nodes() {
		if n.State.Live() && !n.InDoubt && !n.NeverSettled && (c.parent == nil || n.Parent == c.self) {
			out = append(out, n.ID)
		}
	}
	return out
}

// ObserveArgs are observe_agent's arguments: the worker, and which page
// of its settled output to return (see ObservePage).
type ObserveArgs struct {
	WorkerID NodeID `json:"workerId"`
	// OutputPath is a JSON pointer into the worker's result
	// {text, output}; DefaultOutputPath when empty.
	OutputPath string `json:"outputPath,omitzero" jsonschema:"JSON pointer into the worker's result {text, output}; default /text"`
	// Offset is the byte offset the page starts at (a previous reply's
	// nextOffset); Limit the page's size in bytes, MaxObservePage when 0.
	Offset int64 `json:"offset,omitzero" jsonschema:"byte offset to read the output from: the nextOffset of the previous page"`
	Limit  int64 `json:"limit,omitzero" jsonschema:"page size in bytes, at most 16000 (the default)"`
}

// Observation is observe_agent's reply.
type Observation struct {
	WorkerID  NodeID          `json:"workerId"`
	Label     string          `json:"label,omitzero"`
	Profile   string          `json:"profile"`
	Status    State           `json:"status"`
	InDoubt   bool            `json:"inDoubt,omitzero"`
	Reserved  *BudgetRecord   `json:"reserved"`
	Spent     *SpendRecord    `json:"spent,omitzero"`
	Delivered bool            `json:"delivered"`
	Verdict   *kernel.Verdict `json:"verdict,omitzero"`
	OutRef    string          `json:"outRef,omitzero"`
	Output    string          `json:"output,omitzero"`
	Reason    string          `json:"reason,omitzero"`
	Steerable bool            `json:"steerable"`
	// OutputPath, Offset, NextOffset and OutputBytes place the Output
	// page in the settled worker's result: the value at OutputPath is
	// OutputBytes long, the page starts at Offset, and NextOffset (nil
	// on the last page) is where the next one starts.
	OutputPath  string `json:"outputPath,omitzero"`
	Offset      int64  `json:"offset,omitzero"`
	NextOffset  *int64 `json:"nextOffset,omitzero"`
	OutputBytes *int64 `json:"outputBytes,omitzero"`
	// Progress is the worker's progress (§9 observe_agent).
	Progress *WorkerProgress `json:"progress"`
}

// ErrUnknownWorker is observe_agent's and steer_agent's refusal of a
// worker id the run does not have.
var ErrUnknownWorker = errors.New("supervise: unknown worker")

// Observe returns a worker's status, spend, progress and, once settled,
// the first page of its text (ObservePage with default arguments).
func (c *Coordinator) Observe(id NodeID) (Observation, error) {
	return c.ObservePage(context.Background(), ObserveArgs{WorkerID: id})
}

// SteerArgs are steer_agent's arguments.
type SteerArgs struct {
	WorkerID    NodeID `json:"workerId"`
	Instruction string `json:"instruction"`
	Interrupt   bool   `json:"interrupt,omitzero"`
}

// SteerResult is steer_agent's reply; Outcome is one of the steer
// acknowledgement effects (delivered, not_live, unsupported, refused).
type SteerResult struct {
	Delivered bool   `json:"delivered"`
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason,omitzero"`
	// Progress is the worker's progress once the steer was answered
	// (§9 steer_agent).
	Progress *WorkerProgress `json:"progress,omitzero"`
	// Replayed: the call was run again by a resumed manager (its result
	// was not journaled) and this is what its first run did, from the
	// journal; the steer was not sent again.
	Replayed bool `json:"replayed,omitzero"`
}

// Steerer is implemented by an executor whose live workers accept
// messages; Deliver reports whether the worker's inbox accepted msg and
// never blocks past ctx.
type Steerer interface {
	Deliver(ctx context.Context, node NodeID, msg string) bool
}

// Steer delivers an instruction to a live worker's inbox when the
// executor has one; addressed to the run id (or the root), it is a root
// steer for the manager's own inbox, as the run dir's steer requests
// route one. A nested manager steers only its own subtree. With an executor that reads inboxes (InboxReader)
// it waits, at most MaxSteerWait, until the worker's next turn takes the
// instruction. A call of the manager's tool loop is keyed by its call id
// (steerOperationID): run again by a resumed manager, a worker's steer
// answers what the journal says its first run did (Replayed), unknown
// when that run's outcome was never journaled, and is not sent again. A
// root steer is delivered once the manager's journaled transcript holds
// it; one a resumed run finds accepted but never acknowledged is
// re-offered to the manager by the run itself, not by the call run
// again, and so is one to a nested manager the resumed run drives again.
// The run's end waits for a root steer under way (called before the
// manager's inbox closed) to journal its acknowledgement.
func (c *Coordinator) Steer(ctx context.Context, a SteerArgs) (SteerResult, error) {
	if err := checkSteerMessage(a.Instruction); err != nil {
		// Refused before anything is journaled or delivered: the bound
		// a cross-process steer has (WriteWorkerSteer).
		return SteerResult{Outcome: string(SteerRefused), Reason: "the instruction " + err.Error()}, nil
	}
	if c.parent == nil && (a.WorkerID == NodeID(c.runID) || a.WorkerID == c.scope.Root()) {
		// A root steer, as the cross-process path routes one: the
		// manager's own inbox (ManagerInbox), read between its turns.
		// A call a resumed manager runs again is not sent again: the
		// resumed run re-offered the steer its first run accepted
		// (reofferSteers), and acknowledges it when its outcome is
		// known; the call answers the journaled outcome, or unknown.
		a.WorkerID = c.scope.Root()
		op, keyed := c.steerOperationID(ctx)
		if keyed {
			if prior, ack, ok := c.journaledSteer(op); ok {
				if ack != nil {
					return c.replayedSteer(ctx, prior, ack), nil
				}
				return reofferedSteer(), nil
			}
		}
		// Counted from here to its acknowledgement, unless the run's end
		// closed the manager's inbox already (its journal may be closed
		// too: what follows is then not_live, and lost as before).
		if c.rootSteers.enter() {
			defer c.rootSteers.leave()
		}
		req := c.steerRequested(ctx, a, op)
		if err := c.log.current(); err != nil {
			return SteerResult{}, steerLost(err)
		}
		res := SteerResult{Outcome: string(SteerRefused)}
		if msg, err := c.authorizeSteer(ctx, req, a.WorkerID); err != nil {
			res.Reason = err.Error()
		} else {
			effect, reason := c.deliverRoot(ctx, msg, req.OperationID)
			res = SteerResult{Delivered: effect == SteerDelivered, Outcome: string(effect), Reason: reason}
		}
		c.steerAcknowledged(ctx, req, res)
		return res, nil
	}
	info, ok := c.scope.Node(a.WorkerID)
	if !ok || !c.reaches(a.WorkerID) {
		return SteerResult{}, fmt.Errorf("%w: %s", ErrUnknownWorker, a.WorkerID)
	}
	var res SteerResult
	op, keyed := c.steerOperationID(ctx)
	if keyed {
		if req, ack, ok := c.journaledSteer(op); ok {
			// The call run again by a resumed manager: what its first
			// run did, never a second delivery. A nested manager
			// driven again was re-offered the steer (reofferSteers),
			// which acknowledges it.
			if ack == nil && c.reoffersSteers(a.WorkerID) {
				res = reofferedSteer()
			} else {
				res = c.replayedSteer(ctx, req, ack)
			}
			if now, ok := c.scope.Node(a.WorkerID); ok {
				res.Progress = c.progressOf(now)
			}
			return res, nil
		}
	}
	req := c.steerRequested(ctx, a, op)
	if err := c.log.current(); err != nil {
		return SteerResult{}, steerLost(err)
	}
	if !live(info) {
		// Nothing to authorize: the worker cannot take it.
		res = SteerResult{Outcome: string(SteerNotLive), Reason: notLiveDetail(info)}
	} else if qid := c.awaitedDecision(a.WorkerID); qid != "" {
		// The worker's next turn, which would take the steer, comes only
		// once this manager decides: waiting for it would hold the
		// manager until the steer's wait ends.
		res = SteerResult{Outcome: string(SteerRefused), Reason: "the worker waits for your decision on its question " + qid +
			"; its next turn, which would take this message, comes only after it: answer it first (answer_question)"}
	} else if msg, err := c.authorizeSteer(ctx, req, a.WorkerID); err != nil {
		res = SteerResult{Outcome: string(SteerRefused), Reason: err.Error()}
	} else {
		effect, reason := c.deliver(ctx, info, msg, req.OperationID)
		res = SteerResult{Delivered: effect == SteerDelivered, Outcome: string(effect), Reason: reason}
	}
	c.steerAcknowledged(ctx, req, res)
	if now, ok := c.scope.Node(a.WorkerID); ok {
		res.Progress = c.progressOf(now)
	}
	return res, nil
}

// steerLost is steer_agent's error once its request was journaled (or
// refused) by a process that no longer holds the run's store journal
// (runLog.current): the steer is delivered to nobody, since the run's
// workers are no longer this process's to steer.
func steerLost(err error) error {
	return fmt.Errorf("supervise: steer_agent: %w", spawnLogLost(err))
}

// awaitedDecision returns the id of a question worker id waits on whose
// decision is this manager's to make (asked of it, or escalated to it),
// "" when there is none.
func (c *Coordinator) awaitedDecision(id NodeID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.questionsTo[c.self] {
		if q.From == id && q.decision == nil && q.waiterLocked() != nil {
			return q.ID
		}
	}
	return ""
}

// SubmitArgs are submit_result's arguments.
type SubmitArgs struct {
	Result string `json:"result" jsonschema:"the run's final result"`
}

// SubmitResult is submit_result's reply.
type SubmitResult struct {
	Accepted    bool            `json:"accepted"`
	Verdict     *kernel.Verdict `json:"verdict,omitzero"`
	Expectation string          `json:"expectation,omitzero"`
	OutRef      string          `json:"outRef,omitzero"`
	// Replayed: this result was accepted already (journaled), by an
	// earlier run of the same call; it is not checked or kept again.
	Replayed bool `json:"replayed,omitzero"`
}

// Submit offers the run's result to the deliverable check. The first
// passing result is kept; a later one is refused earlier-passing-result,
// unless it is the kept result itself (Replayed).
func (c *Coordinator) Submit(ctx context.Context, a SubmitArgs) (SubmitResult, error) {
	c.mu.Lock()
	done, stopped := c.submitted != nil || c.submitting, c.stopped
	prior := c.submitted
	ended := c.endedLocked()
	c.mu.Unlock()
	if prior != nil && prior.OutRef != "" {
		if ref, err := canonjson.Digest(resultValue(a.Result, canonjson.Value{})); err == nil && ref == prior.OutRef {
			// The very result accepted already: a call run again by a
			// resumed manager (its result was not journaled) is told
			// what its first run was told.
			return SubmitResult{Accepted: true, Verdict: prior.Verdict, OutRef: ref, Replayed: true}, nil
		}
	}
	switch {
	case done:
		return SubmitResult{}, &VerbRefusal{Code: "earlier-passing-result", Reason: "a passing result was already accepted"}
	case stopped:
		return SubmitResult{}, &VerbRefusal{Code: string(CodeScopeSettled), Reason: "the manager stopped: the run takes no result now"}
	case ended != nil:
		return SubmitResult{}, &VerbRefusal{Code: string(CodeScopeSettled), Reason: clip("the manager ended ("+ended.Error()+"): the run takes no result now", MaxReasonBytes)}
	}
	v, err := c.runCheck(ctx, Output{Node: c.self, Text: a.Result})
	if err != nil {
		// A check that could not judge is not passed (behaviour 41); the
		// manager is told why, as a worker's settlement tells it.
		v = kernel.Verdict{Passed: false, Reason: clip(err.Error(), MaxReasonBytes)}
	}
	if !v.Passed {
		return SubmitResult{Expectation: c.check.Describe, Verdict: &v}, nil
	}
	val := resultValue(a.Result, canonjson.Value{})
	ref, err := c.log.putBlob(ctx, val)
	if err != nil {
		return SubmitResult{}, err
	}
	c.mu.Lock()
	if c.submitted != nil || c.submitting {
		c.mu.Unlock()
		return SubmitResult{}, &VerbRefusal{Code: "earlier-passing-result", Reason: "a passing result was already accepted"}
	}
	if ended := c.endedLocked(); ended != nil || c.stopped {
		c.mu.Unlock()
		why := "the manager stopped"
		if ended != nil {
			why = "the manager ended (" + ended.Error() + ")"
		}
		return SubmitResult{}, &VerbRefusal{Code: string(CodeScopeSettled), Reason: clip(why+": the run takes no result now", MaxReasonBytes)}
	}
	c.submitting = true
	c.mu.Unlock()
	// The result is the manager's only once its record is durable: a
	// result the journal refused is not accepted (the brain may submit
	// again), and a resume finds exactly what was accepted. A nested
	// manager's is journaled under its node (the root's record names
	// none): it is its worker's output, which its settlement journals
	// again, through the completion gate.
	rec := Record{Kind: KindSubmitted, OutRef: ref, Verdict: &v}
	if c.parent != nil {
		rec.Node = c.self
	}
	err = c.log.append(ctx, rec)
	c.mu.Lock()
	c.submitting = false
	if err == nil {
		c.submitted = &Winner{Node: c.self, Text: a.Result, OutRef: ref, Verdict: &v, Submitted: true}
	}
	c.mu.Unlock()
	if err != nil {
		return SubmitResult{}, err
	}
	return SubmitResult{Accepted: true, Verdict: &v, OutRef: ref}, nil
}

// endedLocked is why this manager ended while its brain may still
// call (its brain context's cause: the deadline, a cancellation, an
// abort; for the run's root, a failed StopRule too), nil while it
// drives; c.mu is held. A result submitted after that end is not the
// run's: the first end decides.
func (c *Coordinator) endedLocked() error {
	if c.parent == nil {
		if f, _ := c.progress.failure(); f != nil {
			return f
		}
	}
	if c.brainCtx != nil && c.brainCtx.Err() != nil {
		return context.Cause(c.brainCtx)
	}
	return nil
}

// StopArgs are stop's arguments.
type StopArgs struct {
	Reason string `json:"reason,omitzero"`
}

// StopResult is stop's reply.
type StopResult struct {
	Stopped bool `json:"stopped"`
}

// Stop ends the run: nothing more is admitted and the brain's loop ends
// after this call. It is refused (unresolved-blocking-questions) while a
// blocking question to this manager — blocks-run or blocks-step — is
// undecided (§3.6 "Questions", §15 behaviour 54).
//
// A spawn or run_analyst admitted after Stop returned is none: they read
// the stop and admit under spawnMu, which Stop holds while it stops.
func (c *Coordinator) Stop(a StopArgs) (StopResult, error) {
	c.spawnMu.Lock()
	c.mu.Lock()
	for _, q := range c.questions {
		undecided := q.decision == nil && (q.Status == "open" || q.Status == "escalated") || q.upstream
		if q.to == c.self && (q.Urgency == UrgencyBlocksRun || q.Urgency == UrgencyBlocksStep) && undecided {
			c.mu.Unlock()
			c.spawnMu.Unlock()
			return StopResult{}, &VerbRefusal{Code: "unresolved-blocking-questions", Reason: "question " + q.ID + " (" + string(q.Urgency) + ") is undecided"}
		}
	}
	c.stopped, c.stopWhy = true, a.Reason
	fn := c.stopFn
	c.mu.Unlock()
	c.spawnMu.Unlock()
	if fn != nil {
		fn(ErrStopped)
	}
	return StopResult{Stopped: true}, nil
}

// JournalArgs are read_journal's arguments (§9 read_journal{sinceRow?,
// kinds?, limit?, maxBytes?}).
type JournalArgs struct {
	SinceRow int      `json:"sinceRow,omitzero"`
	Kinds    []string `json:"kinds,omitzero"`
	Limit    int      `json:"limit,omitzero"`
	// MaxBytes bounds the JSON of the page's rows, at most
	// MaxJournalPageBytes; read_journal's default is
	// DefaultJournalPageBytes. Zero from a Go caller bounds the page by
	// Limit only.
	MaxBytes int `json:"maxBytes,omitzero" jsonschema:"most bytes of JSON one page's rows hold (default 65536, at most 262144)"`
}

// JournalPage is read_journal's reply.
type JournalPage struct {
	Rows    []Record `json:"rows"`
	NextRow int      `json:"nextRow"`
	More    bool     `json:"more"`
	// Oversize names the row a page could not hold: the first row
	// read, larger than MaxBytes on its own. It is not returned; NextRow
	// is past it.
	Oversize *OversizeRow `json:"oversize,omitzero"`
}

// MarshalValue encodes the page as read_journal's result: each row as it
// is journaled, its Data (a canonjson.Value, which encoding/json would
// write as {}) included.
func (p JournalPage) MarshalValue() (canonjson.Value, error) {
	type plain JournalPage
	return canonjson.ToValue(plain(p))
}

// OversizeRow is a journal row larger than a read_journal page's
// byte bound.
type OversizeRow struct {
	Row   int    `json:"row"`
	Kind  string `json:"kind"`
	Bytes int    `json:"bytes"`
}

// read_journal bounds.
const (
	// MaxJournalPage bounds one read_journal page's rows.
	MaxJournalPage = 200
	// DefaultJournalPageBytes is read_journal's byte bound when its call
	// names none; MaxJournalPageBytes the largest it takes.
	DefaultJournalPageBytes = 64 << 10
	MaxJournalPageBytes     = 256 << 10
)

// ReadJournal pages through the run's own journal, prior processes'
// records included.
func (c *Coordinator) ReadJournal(a JournalArgs) JournalPage {
	limit := a.Limit
	if limit <= 0 || limit > MaxJournalPage {
		limit = MaxJournalPage
	}
	maxBytes := min(a.MaxBytes, MaxJournalPageBytes)
	rows, next, more, over := c.log.page(a.SinceRow, a.Kinds, limit, maxBytes)
	if rows == nil {
		rows = []Record{}
	}
	return JournalPage{Rows: rows, NextRow: next, More: more, Oversize: over}
}

// checkJournalArgs refuses what read_journal's caller cannot have
// meant, naming the argument's JSON pointer: a kind no record has (a
// misspelt kind would page through the whole journal and answer an
// empty page, as if nothing of that kind happened), and a sinceRow
// before the first row or past the last (a cursor from nowhere: the
// page would be empty and its nextRow would skip every row journaled
// until the journal reached it).
func (c *Coordinator) checkJournalArgs(a JournalArgs) error {
	for i, k := range a.Kinds {
		if !slices.Contains(journalKinds, k) {
			return &VerbRefusal{Code: "invalid-kind", Reason: fmt.Sprintf("/kinds/%d: %q is not a journal record kind: give %s, or leave kinds out for every kind but transcript", i, clip(k, 64), strings.Join(journalKinds, ", "))}
		}
	}
	if rows := c.log.length(); a.SinceRow < 0 || a.SinceRow > rows {
		return &VerbRefusal{Code: "invalid-row", Reason: fmt.Sprintf("/sinceRow: %d is not a row of the journal, which holds rows 0 to %d: give 0, or a page's nextRow", a.SinceRow, rows)}
	}
	return nil
}

// VerbRefusal is a coordination verb's refusal other than a spawn's:
// a tool result {error: Code, reason: Reason}.
type VerbRefusal struct {
	Code   string
	Reason string
}

func (e *VerbRefusal) Error() string { return "supervise: refused: " + e.Code + ": " + e.Reason }

// replayRecords rebuilds the scope and the coordinator from a resumed
// run's journal, in recorded order: every spawn is admitted again (the
// same ids, the same reservations), every settlement settled with its
// journaled spend, and every spawn left without a settlement marked in
// doubt, charged at its ceiling (§15 behaviour 40).
func (c *Coordinator) replayRecords(prior []Record) error {
	c.scope.setReplaying(true)
	defer c.scope.setReplaying(false)
	var bound map[NodeID]string // each worker's journaled execution
	// What this run was asked to cancel: workers (and their subtrees)
	// and the whole run. A recovered execution that ended cancelled is
	// the worker's outcome only if someone asked (see recoverInDoubt).
	cancelAsked := map[NodeID]bool{}
	cancelTargets := map[string]NodeID{} // by operation id
	runCancelAsked := false
	managers := map[NodeID]bool{} // the nested managers spawned
	var openTurns []string        // driver turns opened, in order
	endedTurns := map[string]bool{}
	for i, r := range prior {
		if r.Kind == KindRunStarted && i > 0 {
			// A run journals one run-started record, its first: another
			// is a journal mixed from two runs (or two starts of one),
			// whose rows no replay can tell apart.
			return &ResumeError{RunDir: c.log.where, Reason: fmt.Sprintf("journal record %d is a second run-started record (run %q)", i+1, clip(r.RunID, 128))}
		}
		if r.Kind == KindAnalystDefined {
			if err := c.replayAnalyst(r); err != nil {
				return err
			}
			continue
		}
		switch r.Kind {
		case KindSpawned:
			req := SpawnRequest{Parent: r.Parent, Label: r.Label, Profile: r.Profile, Model: r.Model, Task: r.Task, Key: r.Key,
				Budget: r.Budget.budget(), ProfileDigest: r.ProfileDigest}
			if r.ProfileDigest != "" {
				p, err := resumeAuthored(r)
				if err != nil {
					return &ResumeError{RunDir: c.log.where, Reason: "re-reading the authored profile of " + string(r.Node), Err: err}
				}
				req.Authored = p
			}
			// A refused spawn's number the journal skips is skipped.
			if seq, ok := r.Node.seq(); ok {
				c.scope.skipTo(seq)
			}
			// Admitted by the process that journaled it: AuthorizeSpawn
			// is not asked again.
			reply, err := c.scope.admit(req)
			if err != nil {
				return &ResumeError{RunDir: c.log.where, Reason: "replaying spawn of " + string(r.Node), Err: err}
			}
			if reply.Node != r.Node {
				return &ResumeError{RunDir: c.log.where, Reason: fmt.Sprintf("replayed spawn got id %s, journal says %s", reply.Node, r.Node)}
			}
			if r.ResumeOf != "" {
				if err := c.scope.restoreResumeOf(r.Node, r.ResumeOf); err != nil {
					return &ResumeError{RunDir: c.log.where, Reason: "replaying the continuity of " + string(r.Node), Err: err}
				}
			}
			if err := c.scope.Transition(r.Node, StateRunning); err != nil {
				return &ResumeError{RunDir: c.log.where, Reason: "replaying " + string(r.Node), Err: err}
			}
			// Its journaled runtime: a nested manager settled before the
			// crash is not driven again, and is still a manager (the
			// root's replayed spawn under it is not parent-not-manager).
			c.workers[r.Node] = &worker{id: r.Node, task: r.Task, replayed: true, profile: req.Authored, runtime: r.Runtime}
			if r.Runtime == RuntimeManager {
				managers[r.Node] = true
			}
			if err := c.replayAnalyst(r); err != nil {
				return err
			}
			if r.Key == "" {
				k := replayKey(req)
				c.pending(r.Node, k)
			}
		case KindAnalysisRequested, KindAnalysisRefused, KindAfterSettle:
			if err := c.replayAnalyst(r); err != nil {
				return err
			}
		case KindSettled:
			if err := c.replayAnalyst(r); err != nil {
				return err
			}
			w := c.workers[r.Node]
			if w == nil {
				return &ResumeError{RunDir: c.log.where, Reason: "settlement of unknown node " + string(r.Node)}
			}
			if r.Delivered && (r.State != StateDone || r.Verdict == nil || !r.Verdict.Passed) {
				// Only a done worker whose check passed is delivered, and
				// its settlement journals the verdict that delivered it.
				return &ResumeError{RunDir: c.log.where, Reason: fmt.Sprintf("journal record %d: %s settled %s, delivered without a passing verdict", i+1, r.Node, r.State)}
			}
			st, err := c.scope.Settle(r.Node, Result{State: r.State, Spent: r.Spent.spend(), Reason: r.Reason})
			if err != nil && st.Node == "" {
				return &ResumeError{RunDir: c.log.where, Reason: "replaying settlement of " + string(r.Node), Err: err}
			}
			w.outRef, w.verdict, w.delivered, w.reason, w.checkErr, w.session = r.OutRef, r.Verdict, r.Delivered, r.Reason, r.CheckError, r.Session
			w.sessionRef = checkedRef(r.SessionRef)
			if r.TeardownUnconfirmed != "" {
				// The settlement says its teardown went unconfirmed: so
				// the worker is named and its slot held even when the
				// process died before its teardown-unconfirmed record.
				info, _ := c.scope.Node(r.Node)
				c.replayTeardown(Record{Kind: KindTeardownUnconfirmed, Node: r.Node, Label: labelOf(info.Label, info.Profile),
					Runtime: r.Runtime, State: r.State, Reason: r.TeardownUnconfirmed})
			}
			if r.Delivered && r.OutRef == "" && r.State == StateDone {
				// Journaled by a version that delivered an unstored
				// result: there is nothing to deliver.
				w.delivered = false
			}
			if r.OutRef != "" {
				if v, err := c.log.getBlob(r.OutRef); err == nil {
					if t, ok := canonjson.Resolve(v, "/text"); ok {
						w.text = t.Str()
					}
					if o, ok := canonjson.Resolve(v, "/output"); ok {
						w.output = o
					}
				} else {
					// Its text is gone: never a winner with an empty text.
					c.logger.Warn("supervise: a settled result's blob is unreadable; it is not delivered", "node", r.Node, "err", err)
					w.delivered = false
				}
			}
			if c.progress.rule != nil && c.isRootChild(r.Node) {
				var at time.Time
				if r.AtMS != 0 {
					at = time.UnixMilli(r.AtMS)
				}
				var score *float64
				if w.verdict != nil {
					score = w.verdict.Score
				}
				c.progress.noteSettled(sample(r.Node, at, st.State, w.delivered, score))
			}
			c.publishReplayed(w, st.State)
			if st.State == StateCancelled || st.State == StateFailed {
				for op, target := range cancelTargets {
					if r.Node.within(target) {
						if c.cancelDown == nil {
							c.cancelDown = map[string][]NodeID{}
						}
						c.cancelDown[op] = append(c.cancelDown[op], r.Node)
					}
				}
			}
		case KindCancelRequested:
			if r.Node != "" {
				cancelAsked[r.Node] = true
				if v, ok := canonjson.Resolve(r.Data, "/operationId"); ok && v.Str() != "" {
					cancelTargets[v.Str()] = r.Node
				}
			}
		case KindRunCancelRequested:
			runCancelAsked = true
			c.cancelJournaled = !c.deadlineFirst
		case KindExecutionBound:
			if r.Execution != "" {
				if bound == nil {
					bound = map[NodeID]string{}
				}
				bound[r.Node] = r.Execution
				if w := c.workers[r.Node]; w != nil {
					w.execution = r.Execution
				}
			}
		case KindMetered, KindTranscript:
			if r.Spent == nil {
				continue // a transcript record of no model turn's, or an older version's
			}
			// A metered record, or the transcript record that journaled a
			// model turn's answer with its spend: charged once either way.
			if r.Node != "" && r.Node != c.scope.Root() {
				if c.workers[r.Node] == nil {
					// No manager the run spawned: charged to a view of a
					// node that never settles, the spend would vanish.
					return &ResumeError{RunDir: c.log.where, Reason: fmt.Sprintf("journal record %d: spend of %s, which the journal never spawned", i+1, clip(string(r.Node), 128))}
				}
				// A nested manager's turn: its node's spend, settled with
				// it (or counted on when it is driven again).
				c.viewOfLocked(r.Node).meterNestedLocked(r.Spent.spend())
				c.scope.ObserveNode(r.Node, r.Spent.spend())
				continue
			}
			c.chargeDriver(r.Spent.spend())
		case KindDriverTurn:
			openTurns = append(openTurns, r.Key)
		case KindDriverTurnEnded:
			endedTurns[r.Key] = true
			c.chargeDriver(r.Spent.spend())
		case KindSubmitted:
			// A record naming no node, or the root's (as every record
			// before nested managers journaled theirs), is the run's.
			v := c.viewOfLocked(r.Node)
			if v.submitted != nil {
				if v.submitted.OutRef == r.OutRef {
					continue // the same submission twice: one
				}
				// Submit journals one result per manager (the first
				// passing one): another is no run's, and never replaces it.
				return &ResumeError{RunDir: c.log.where, Reason: fmt.Sprintf("journal record %d: a second result submitted by %s", i+1, v.self)}
			}
			v.submitted = &Winner{Node: v.self, OutRef: r.OutRef, Verdict: r.Verdict, Submitted: true}
			// Submit stores its result before it journals the record: a
			// blob that is gone or does not hash to its name cannot say
			// what was accepted, and is never a winner with no text.
			b, err := c.log.getBlob(r.OutRef)
			if err != nil {
				return &ResumeError{RunDir: c.log.where, Reason: fmt.Sprintf("journal record %d: reading the result %s submitted", i+1, v.self), Err: err}
			}
			if t, ok := canonjson.Resolve(b, "/text"); ok {
				v.submitted.Text = t.Str()
			}
		case KindTeardownUnconfirmed:
			c.replayTeardown(r)
		case KindBreakerTripped:
			// The run ended tripped: it stays so, its manager not
			// driven again.
			if r.Breaker != nil && c.tripped == nil && c.abortWhy == "" {
				trip := *r.Breaker
				c.tripped = &trip
				c.scope.Abort()
			}
		case KindExtraToolCalled, KindExtraToolDone:
			c.replayExtraTool(r)
		case KindDeadlinePassed:
			c.deadlineFirst = true
		case KindProgressStopped:
			// The run's stop rule ended it: it stays so, its manager not
			// driven again.
			if c.progress.stopped == nil && c.tripped == nil && c.abortWhy == "" {
				c.progress.stopped = &ProgressStop{Reason: r.Reason, AtMS: r.AtMS}
				c.scope.Abort()
			}
		case KindAborted:
			if c.tripped == nil && c.abortWhy == "" {
				c.abortWhy = r.Reason
				if c.abortWhy == "" {
					c.abortWhy = "root handle aborted"
				}
				c.scope.Abort()
			}
		}
	}
	for _, k := range openTurns {
		if !endedTurns[k] {
			// The process died in the manager's turn: what it reported
			// was metered; the rest is unknown, never 0.
			c.chargeDriver(unendedTurnSpend())
		}
	}
	for _, n := range c.scope.Nodes() {
		if n.State.Live() && !n.InDoubt {
			if x := bound[n.ID]; x != "" {
				// Its execution is named: it stays live, its reservation
				// held, until recoverInDoubt recovers it or marks it.
				asked := runCancelAsked || inSubtreeOf(n.ID, cancelAsked)
				c.recovering = append(c.recovering, recoverable{node: n.ID, execution: x, cancelAsked: asked})
				continue
			}
			if managers[n.ID] {
				// A nested manager is driven again under its id, its
				// settled children replayed (redriveManagers): its
				// reservation stays held meanwhile.
				c.redrive = append(c.redrive, n.ID)
				continue
			}
			if err := c.scope.MarkInDoubt(n.ID); err != nil {
				return &ResumeError{RunDir: c.log.where, Reason: "marking " + string(n.ID) + " in doubt", Err: err}
			}
			if w := c.workers[n.ID]; w != nil {
				w.reason = errNoExecution
			}
		}
	}
	c.pruneReplay()
	return nil
}

// inSubtreeOf reports whether id, or a node it descends from, is in
// roots. A descendant's id extends its ancestor's with ":", so the
// lookups are one per ancestor, whatever the size of roots.
func inSubtreeOf(id NodeID, roots map[NodeID]bool) bool {
	if len(roots) == 0 {
		return false
	}
	s := string(id)
	for i := strings.IndexByte(s, ':'); i >= 0; {
		if roots[NodeID(s[:i])] {
			return true
		}
		j := strings.IndexByte(s[i+1:], ':')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return roots[id]
}

// pruneReplay keeps, for an unkeyed spawn, only the settled-done nodes
// to replay (and those awaiting recovery, until recoverInDoubt prunes
// again): a node in doubt or down runs again when asked — but a node in
// doubt whose execution was bound (it may still run) is kept aside
// (replayInDoubt) for the call that made it, should that call run again
// (claimInDoubtReplay).
func (c *Coordinator) pruneReplay() {
	c.mu.Lock()
	defer c.mu.Unlock()
	awaiting := make(map[NodeID]bool, len(c.recovering)+len(c.redrive))
	for _, r := range c.recovering {
		awaiting[r.node] = true
	}
	for _, id := range c.redrive {
		awaiting[id] = true
	}
	for k, ids := range c.replay {
		c.replay[k] = slices.DeleteFunc(ids, func(id NodeID) bool {
			n, _ := c.scope.Node(id)
			drop := n.State != StateDone && !awaiting[id]
			if w := c.workers[id]; drop && n.InDoubt && w != nil && w.execution != "" {
				if c.replayInDoubt == nil {
					c.replayInDoubt = map[string][]NodeID{}
				}
				c.replayInDoubt[k] = append(c.replayInDoubt[k], id)
			}
			return drop
		})
	}
}

func (c *Coordinator) pending(id NodeID, key string) {
	if c.replay == nil {
		c.replay = map[string][]NodeID{}
	}
	c.replay[key] = append(c.replay[key], id)
}

func (c *Coordinator) publishReplayed(w *worker, state State) {
	info, _ := c.scope.Node(w.id)
	c.viewOfLocked(parentOrRoot(w.id, c.root.self)).pushLocked(c.settledEventLocked(w, info, state))
}

// parentOrRoot is id's parent, root for a node without one.
func parentOrRoot(id, root NodeID) NodeID {
	if p, ok := id.Parent(); ok {
		return p
	}
	return root
}

// ErrNoteKind: Note was asked to write a kind supervise does not accept
// from a layer above.
var ErrNoteKind = errors.New("supervise: not a note kind")

// Note appends a record a layer above supervise keeps in this run's
// journal — KindEdge and KindGraph, package graph's edge ledger and
// topology — so the run's one journal holds it beside the spawns and
// settlements it explains. It is durable (when the run has a RunDir) before Note
// returns, read_journal pages through it, and a resumed run passes it
// over. A note the journal refused is counted as lost (the run's result
// then comes with a *JournalLossError).
func (c *Coordinator) Note(ctx context.Context, kind string, node NodeID, data canonjson.Value) error {
	if kind != KindEdge && kind != KindGraph {
		return fmt.Errorf("%w: %q", ErrNoteKind, kind)
	}
	// A note records what its layer already did (a graph traversal):
	// one the journal refused is a loss of the run's record.
	return c.log.appendOrLose(ctx, Record{Kind: kind, Node: node, Data: data})
}

// Readout returns the run's pool balances.
func (c *Coordinator) Readout() ledger.Readout { return c.pool.Readout() }

// CarvedReadout returns the balances of the pool nested manager id's
// children draw on, carved from its reservation (carve.go): its grant
// as the total, its children's reservations and charges and its own
// metered turns. ok is false when id never carved one (it spawned
// nothing and metered nothing, or its reservation caps no tokens or no
// iterations) or is not in this view's subtree.
func (c *Coordinator) CarvedReadout(id NodeID) (r ledger.Readout, ok bool) {
	if !c.reaches(id) {
		return ledger.Readout{}, false
	}
	return c.scope.Carved(id)
}

// RunID returns the supervised run's id.
func (c *Coordinator) RunID() string { return c.runID }

// RunDir returns the run's directory ("" when the run has none):
// where a host serving the verbs to another process publishes how to
// reach them.
func (c *Coordinator) RunDir() string { return c.log.dir }

// WorkerProfiles returns, sorted, the worker profile names spawn_worker
// accepts: what a brain tells a model it may spawn.
func (c *Coordinator) WorkerProfiles() []string {
	return slices.Sorted(maps.Keys(c.profiles))
}

// DeliverableDescription returns the caller's Deliverable.Describe: what
// a delivered result must be ("" when the caller said nothing).
func (c *Coordinator) DeliverableDescription() string { return c.check.Describe }

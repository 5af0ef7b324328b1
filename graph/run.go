package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/tools"
)

// Options configure RunGraph.
//
// Supervise carries every supervise option, classified: Budget,
// Deliverable, Profiles, Brain, AfterSettle, OnResume, AuthorizeMessage
// (pass Options.AuthorizeMessage), AuthoredProfiles and Reprompt are
// owned by the graph and refused when set (*ConfigError naming the
// field);
// Router, MaxTurns, Now and Logger are read by the graph's router brain
// too; WorkspaceRoot without RunDir becomes RunDir
// (supervise.RunDirIn);
// everything else (Executor, Workers, PerWorker, MaxLiveWorkers,
// AuthorizeSpawn — which sees a pinned node's request, Profile being the
// node id — RunDir, RunID, Resume, Analysts, Finalizer,
// ResolveSupervisorTools — the root's own product tools the router brain
// offers, or Driver.NodeTools gives a caller's Brain, and each nested
// manager's —, ExtraTools — the root's work tools the router brain
// offers beside the graph's verbs, or Driver.ExtraTools gives a caller's
// Brain, each call journaled and acting at most once across a resume —,
// …) is forwarded verbatim.
// Analysts are the lenses beside supervise.BuiltinLenses an analyzes
// edge may name. Resume continues the graph run journaled in RunDir
// (see RunGraph). Options is a Go
// struct, so an unknown key cannot be passed; a graph definition read
// from JSON refuses unknown keys in Decode.
type Options struct {
	// Task is the root's task; the graph's brief (the nodes it may
	// spawn, by id) is appended to it. On resume an empty Task adopts
	// the journaled one, and another is refused.
	Task string
	// Registry resolves every edge's directive handle; nil is
	// BuiltinRegistry.
	Registry *Registry
	// Brain, when set, is the caller-owned root brain; it drives the
	// graph through a Driver and owns its model's identity and usage
	// reporting. Without it the root runs on the router brain over
	// Supervise.Router (the two are mutually exclusive). Refused for a
	// root whose harness is external.
	Brain Brain
	// AuthorizeMessage, when set, is the product's authority over every
	// mid-run instruction (a steer, a routed finding, an answer, a steer
	// another process writes into the run's dir): it returns the
	// instruction to deliver, possibly narrowed — a narrowed steer is
	// ledgered stripped — or an error to refuse it (a steer refused is
	// ledgered unpropagated and acknowledged refused). The graph gives it
	// to supervise as Supervise.AuthorizeMessage (which is therefore
	// refused here), so it guards every path supervise delivers by.
	AuthorizeMessage func(ctx context.Context, m Message) (string, error)
	// Supervise are the forwarded supervise options (see above).
	Supervise supervise.Options

	// beforeLensRoute, set by tests alone (export_test.go), runs in a lens
	// finding's settlement hook before the finding is routed and
	// ledgered: a hook the scheduler left behind the driver.
	beforeLensRoute func()
	// afterRouteSteer, set by tests alone (export_test.go), runs when a
	// routed finding's steer has been delivered and before its row is
	// ledgered: a destination worker quicker than the graph.
	afterRouteSteer func()
}

// Message is an instruction on its way into a live worker: a steer, a
// routed finding or an answer to the worker's question.
type Message struct {
	// WorkerID is the destination worker and Node its graph node.
	WorkerID supervise.NodeID
	Node     string
	// Edge is the edge it travels ("" for an answer); Instruction what
	// was composed.
	Edge        string
	Instruction string
}

// Brain drives a graph's root through its Driver (a caller-owned brain).
type Brain interface {
	Drive(ctx context.Context, d *Driver, task string) (supervise.BrainReport, error)
}

// BrainFunc adapts a function to Brain.
type BrainFunc func(ctx context.Context, d *Driver, task string) (supervise.BrainReport, error)

// Drive calls f.
func (f BrainFunc) Drive(ctx context.Context, d *Driver, task string) (supervise.BrainReport, error) {
	return f(ctx, d, task)
}

// EventFinding is the kind Driver.Await gives an analyst's settlement
// (an analyst node's or a lens's): its output is findings, never a
// worker result.
const EventFinding = supervise.EventFinding

// RunGraph runs g as one supervised run (spec runtime §3.7): the root
// node is the manager, each worker node is spawned by id with its
// canonical profile and its delegates edge's directive opening the task,
// analyst nodes run on the settles they are over, and every traversal is
// ledgered and journaled. Nothing is spent before g and o validate.
//
// With Supervise.RunDir (or Supervise.SpawnStore and RunID) and
// Supervise.Resume it continues the graph run that journal holds (after
// its process died): supervise replays
// the settled workers instead of running them, and the graph restores
// its edge ledger, traversal counts and caps from the journal's edge
// records, so a resumed run neither re-runs a settled node nor gets a
// fresh cap.
//
// It returns an error when the run could not start (a *ValidationError,
// a *ConfigError, a supervise error), or a *GraphEdgeCapError — with
// the GraphResult also returned — when a delegates cap was exhausted and
// the run ended without a winner other than by cancellation, abort or
// budget. A run whose journal did not take all of its records returns
// its GraphResult with supervise's error beside it
// (supervise.ErrJournalIncomplete, supervise.ErrOutcomeNotJournaled).
func RunGraph(ctx context.Context, g Graph, o Options) (GraphResult, error) {
	o.Registry = o.registry()
	pl, err := validate(g, o)
	if err != nil {
		return GraphResult{}, err
	}
	logger := o.Supervise.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	topo, err := topologyOf(g, o.Registry)
	if err != nil {
		return GraphResult{}, err
	}
	r := &run{plan: pl, opts: o, check: g.Deliverable, logger: logger, topo: topo, count: map[string]int{}, spent: map[string]int{},
		bound: map[string][]supervise.NodeID{}, analystRuns: map[supervise.NodeID]analystRun{}, lensRuns: map[supervise.NodeID]analystRun{}, lensBy: map[string]supervise.NodeID{}, decided: map[string]bool{}, analysed: map[supervise.NodeID]bool{},
		lensHooks: map[supervise.NodeID]chan struct{}{}, routing: map[supervise.NodeID]int{}, routeWake: make(chan struct{}),
		refusals: map[string]int{}, steerCalls: map[string]bool{}, refusedCalls: map[string]int{}}
	so := o.Supervise
	so.Budget = *g.Budget
	// The graph's check (its Timeout and Identity too) through
	// checkOutput, which keeps analyst nodes from delivering.
	so.Deliverable = g.Deliverable
	so.Deliverable.Check = r.checkOutput
	so.Profiles = map[string]*profile.Profile{}
	for id, n := range pl.workers {
		so.Profiles[id] = n.Profile
	}
	for id, n := range pl.analysts {
		so.Profiles[id] = n.Profile
	}
	so.Brain = rootBrain{r}
	so.AfterSettle = r.afterSettle
	// A resumed run rebuilds the ledger and caps before the settlement
	// hooks the dead process left unfinished run again.
	so.OnResume = r.bind
	if o.AuthorizeMessage != nil {
		// supervise owns the hook, so every message down to a worker
		// passes it — the graph's steers and findings, answers, and
		// steers from other processes (agentrt steer) alike.
		so.AuthorizeMessage = r.authorizeMessage
	}
	if so.RunDir == "" && so.WorkspaceRoot != "" {
		// The layout's default place (supervise.RunDirIn), resolved
		// here so that a resume's journal check reads the same dir.
		if so.RunID == "" {
			so.RunID = kernel.NewID("graph")
		}
		so.RunDir = supervise.RunDirIn(so.WorkspaceRoot, so.RunID)
	}
	if so.Resume {
		if err := pl.checkJournal(ctx, so, topo); err != nil {
			return GraphResult{}, err
		}
		if err := r.checkStarted(ctx, so, *g.Budget, g.LegacyBudgetKeys); err != nil {
			return GraphResult{}, err
		}
	}
	res, err := supervise.Supervise(ctx, pl.root.Profile, r.task(), so)
	// A run whose journal did not take all of it still has its result:
	// it is returned with that error, never dropped.
	incomplete := errors.Is(err, supervise.ErrJournalIncomplete) || errors.Is(err, supervise.ErrOutcomeNotJournaled)
	if err != nil && !incomplete {
		return GraphResult{}, err
	}
	r.mu.Lock()
	out := GraphResult{Result: res, Ledger: slices.Clone(r.ledger), ExhaustedEdges: slices.Clone(r.exhausted), RunID: res.RunID}
	capped := slices.Clone(r.exhaustedDelegates)
	r.mu.Unlock()
	lifecycle := res.Reason == supervise.ReasonCancelled || res.Reason == supervise.ReasonAborted || res.Reason == supervise.ReasonBudgetExhausted
	if res.Status != supervise.StatusWinner && !lifecycle && len(capped) > 0 {
		capErr := &GraphEdgeCapError{ExhaustedEdges: capped, Ledger: out.Ledger, Result: res}
		if err != nil {
			return out, errors.Join(capErr, err)
		}
		return out, capErr
	}
	return out, err
}

// run is one graph run's state.
type run struct {
	*plan
	opts   Options
	check  supervise.Deliverable
	logger *slog.Logger
	topo   topology

	// spawnMu orders a graph spawn with its binding: a worker's settle
	// looks its spawn up only after the spawn returned.
	spawnMu sync.Mutex

	mu                 sync.Mutex
	coord              *supervise.Coordinator
	ledger             []LedgerRow
	count              map[string]int // ordinals per edge
	spent              map[string]int // traversals charged to each edge's cap
	exhausted          []string
	exhaustedDelegates []string
	bound              map[string][]supervise.NodeID // node → its workers, in spawn order
	analystRuns        map[supervise.NodeID]analystRun
	// lensRuns are the lens analyst workers a resumed journal holds,
	// lensBy the same by lensRunKey.
	lensRuns map[supervise.NodeID]analystRun
	lensBy   map[string]supervise.NodeID
	// decided are the settles (by lensRunKey: analyzes edge and source
	// worker) a resumed run's journal shows an analyzes edge already
	// took its traversal for — an analyst node spawned over it, or a row
	// that ledgers it without an analyst (past the cap, a refused
	// analyst) — so that the settle's hook, run again, neither analyses
	// it twice nor ledgers it twice.
	decided map[string]bool
	// analysed are the analyst workers (node or lens) whose findings a
	// row routes.
	analysed map[supervise.NodeID]bool
	// lensHooks holds, per lens analyst whose finding this process
	// settled, a channel closed once its settlement hook (afterSettle,
	// which ledgers the finding's route) returned: Driver.Await hands the
	// driver a lens finding only then (see findingHook).
	lensHooks map[supervise.NodeID]chan struct{}
	// routing counts, per destination worker, the routed findings being
	// steered into it whose rows are not ledgered yet; routeWake is
	// closed (and replaced) whenever a count drops. Driver.Await hands
	// the driver a destination's event only once its count is 0: the
	// worker may answer the steer and settle before its row.
	routing   map[supervise.NodeID]int
	routeWake chan struct{}
	// refusals counts, per delegates edge, the cap refusals a resumed
	// run's journal holds that no spawn of this process made again yet.
	refusals map[string]int
	// steerCalls are the root's steer_agent calls (by tool call id)
	// whose traversal the ledger holds: a resumed root that runs such a
	// call again is answered from supervise's journal (nothing is sent
	// again), so no second traversal is ledgered or charged for it.
	steerCalls map[string]bool
	// refusedCalls counts, by tool call id and edge, the spawn refusals
	// of root calls a resumed run's journal holds that no call of this
	// process made again yet.
	refusedCalls map[string]int
}

// analystRun is an analyst worker: its edge and the worker it analyzes.
type analystRun struct {
	edge   Edge
	source supervise.NodeID
}

// task is the root's task with the graph brief.
func (r *run) task() string {
	if r.opts.Task == "" {
		return r.brief()
	}
	return r.opts.Task + "\n\n" + r.brief()
}

// brief is the graph brief the root's task ends with: the nodes it may
// spawn and the findings it receives.
func (r *run) brief() string {
	var b strings.Builder
	b.WriteString(briefHeader + "you drive a fixed topology. Spawn ONLY these worker nodes, by exact id as spawn_worker's profile (the node's own profile runs):\n")
	for _, id := range r.order {
		e := r.delegatesTo[id]
		fmt.Fprintf(&b, "- %s (cap %d traversals", id, e.limit())
		if d := r.workers[id].Profile.Description; d != nil && *d != "" {
			fmt.Fprintf(&b, "; %s", *d)
		}
		if e.Continuity == ContinuityResume {
			b.WriteString("; continuity resume: each spawn after the first continues its latest settled session")
		}
		b.WriteString(")\n")
	}
	for _, e := range r.analyzes {
		if e.To == r.root.ID {
			fmt.Fprintf(&b, "Findings of analyst %s over %s arrive from await_event as %q events.\n", e.Analyst, strings.Join(e.Over, ", "), EventFinding)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// drive is the supervised run's brain: it binds the coordinator and
// drives the caller's brain or the router brain through a Driver.
func (r *run) drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	if err := r.bind(ctx, c); err != nil {
		return supervise.BrainReport{}, err
	}
	r.spawnMu.Lock()
	r.mu.Lock()
	r.ledgerInDoubtAnalystsLocked(ctx, c)
	r.mu.Unlock()
	r.spawnMu.Unlock()
	d := &Driver{r: r, c: c}
	if r.opts.Brain != nil {
		return r.opts.Brain.Drive(ctx, d, task)
	}
	return r.routerDrive(ctx, d, task)
}

// rootBrain is the graph's root brain: r.drive, through the router
// brain (whose DriveTools offers the root's Supervise.ExtraTools) or a
// caller's Brain (given them by Driver.ExtraTools), so supervise takes
// ExtraTools with it (supervise.ExtraToolsOfferer).
type rootBrain struct{ r *run }

// Drive drives the graph's root.
func (b rootBrain) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	return b.r.drive(ctx, c, task)
}

// OffersExtraTools marks rootBrain a supervise.ExtraToolsOfferer.
func (rootBrain) OffersExtraTools() {}

// bind binds the coordinator and restores the graph's state from its
// journal, once (OnResume on a resumed run, else when the brain starts).
func (r *run) bind(ctx context.Context, c *supervise.Coordinator) error {
	r.mu.Lock()
	bound := r.coord != nil
	r.coord = c
	r.mu.Unlock()
	if bound {
		return nil
	}
	return r.restore(ctx, c)
}

// routerDrive runs the root profile's router brain over the Driver's
// tools the root declares. Its conversation is journaled turn by turn
// as a supervise manager's is, so a resumed graph's root goes on from
// what it said and what its tools returned: no recorded delegation is
// made again (nor charged to an edge's cap), and no recorded model turn
// is asked again.
func (r *run) routerDrive(ctx context.Context, d *Driver, task string) (supervise.BrainReport, error) {
	all, err := d.Tools()
	if err != nil {
		return supervise.BrainReport{}, err
	}
	b, err := supervise.NewRouterBrain(r.root.Profile, r.opts.Supervise.Router, r.opts.Supervise.MaxTurns)
	if err != nil {
		return supervise.BrainReport{}, err
	}
	return b.DriveTools(ctx, d.c, task, all)
}

// record appends a ledger row with the edge's next ordinal, charges the
// edge's cap when charge is set, and journals the row as an edge record.
func (r *run) record(ctx context.Context, row LedgerRow, charge bool) LedgerRow {
	return r.recordOf(ctx, journaledRow{LedgerRow: row, Charged: charge})
}

// recordOf is record of a row as journaled: with its analyst worker.
func (r *run) recordOf(ctx context.Context, jr journaledRow) LedgerRow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.journalLocked(ctx, r.coord, jr)
}

// recordLocked is record with r.mu held, journaling through c (nil:
// not journaled).
func (r *run) recordLocked(ctx context.Context, c *supervise.Coordinator, row LedgerRow, charge bool) LedgerRow {
	return r.journalLocked(ctx, c, journaledRow{LedgerRow: row, Charged: charge})
}

// journalLocked is recordLocked of a row as journaled.
func (r *run) journalLocked(ctx context.Context, c *supervise.Coordinator, jr journaledRow) LedgerRow {
	row, charge := jr.LedgerRow, jr.Charged
	r.count[row.Edge]++
	row.Traversal = r.count[row.Edge]
	jr.Traversal = row.Traversal
	if charge {
		r.spent[row.Edge]++
	}
	r.ledger = append(r.ledger, row)
	if jr.Call != "" && jr.Continuity == ContinuitySteer {
		r.steerCalls[jr.Call] = true
	}
	if jr.Analyst != "" {
		r.analysed[jr.Analyst] = true
	}
	if c != nil {
		v, err := canonjson.ToValue(jr)
		if err == nil {
			err = c.Note(context.WithoutCancel(ctx), supervise.KindEdge, row.WorkerID, v)
		}
		if err != nil {
			r.logger.Error("graph: journaling an edge traversal", "edge", row.Edge, "traversal", row.Traversal, "err", err)
		}
	}
	return row
}

// capReached reports whether e has spent its cap, marking it exhausted
// when it has.
func (r *run) capReached(e Edge) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := e.ID()
	if r.spent[id] < e.limit() {
		return false
	}
	r.markExhaustedLocked(e)
	return true
}

// replayRefusal reports whether a cap refusal of delegates edge e is one
// a resumed run's journal holds and no call of this process made again
// yet, claiming it.
func (r *run) replayRefusal(e Edge) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refusals[e.ID()] == 0 {
		return false
	}
	r.refusals[e.ID()]--
	return true
}

// charge charges one traversal to e's cap.
func (r *run) charge(e Edge) {
	r.mu.Lock()
	r.spent[e.ID()]++
	r.mu.Unlock()
}

// reserve charges one traversal to e's cap unless it is spent (then it
// marks e exhausted and reports false), in one step: two settlement
// hooks of one analyzes edge deciding at once (their analysts' spawns
// are decided outside the graph's locks, by AuthorizeSpawn among
// others) cannot both take its last traversal. release gives back a
// reservation whose analyst did not start.
func (r *run) reserve(e Edge) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := e.ID()
	if r.spent[id] >= e.limit() {
		r.markExhaustedLocked(e)
		return false
	}
	r.spent[id]++
	return true
}

// decidedOn reports whether a resumed run's journal holds analyzes
// edge e's traversal for the settle of worker source (see run.decided).
func (r *run) decidedOn(e Edge, source supervise.NodeID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decided[lensRunKey(e, source)]
}

// release gives back a traversal reserve charged to e.
func (r *run) release(e Edge) {
	r.mu.Lock()
	r.spent[e.ID()]--
	r.mu.Unlock()
}

func capReason(e Edge) string {
	return "traversal-cap-exhausted (max " + strconv.Itoa(e.limit()) + ")"
}

// compose opens a task with its directive.
func compose(directive, payload string) string {
	switch {
	case directive == "":
		return payload
	case payload == "":
		return directive
	}
	return directive + "\n\n" + payload
}

func (r *run) directive(e Edge) string {
	t, _ := r.opts.Registry.Resolve(e.Directive) // resolved at validation
	return t
}

// nodeOf returns the graph node a worker runs (its profile name is the
// node id).
func nodeOf(c *supervise.Coordinator, id supervise.NodeID) (supervise.Observation, bool) {
	o, err := c.Observe(id)
	return o, err == nil
}

// checkOutput is the supervised run's completion gate: an analyst's
// output is findings (routed, never delivered); a worker's output goes
// to the graph's deliverable and then to the analysts over its node.
func (r *run) checkOutput(ctx context.Context, out supervise.Output) (kernel.Verdict, error) {
	// A spawn binds before its worker's settle is read.
	r.spawnMu.Lock()
	ar, isAnalyst := r.analystRuns[out.Node]
	r.spawnMu.Unlock()
	r.mu.Lock()
	c := r.coord
	// An analyst node's findings are routed (and their row journaled)
	// from here, before its settlement is journaled: a process killed
	// between the two leaves a row naming it, and the resumed run that
	// recovers its execution checks its output again — routed once.
	routed := r.analysed[out.Node]
	r.mu.Unlock()
	if isAnalyst {
		if !routed {
			r.routeFindings(ctx, c, ar, out)
		}
		return kernel.Verdict{Passed: false, Reason: "analyst findings are evidence, never a deliverable"}, nil
	}
	// The analysts over the node run from afterSettle, once the worker's
	// settlement is journaled and delivered: spawned from here, a quick
	// analyst settled — and its finding reached Await — before the
	// settlement it analyzes.
	return r.check.Check(ctx, out)
}

// analyze spawns each analyst over node on this settle, or ledgers why
// not.
func (r *run) analyze(ctx context.Context, c *supervise.Coordinator, node string, out supervise.Output) {
	for _, e := range r.analyzesOver[node] {
		if r.lenses[e.Analyst] {
			continue // lenses run from afterSettle too, through RunAnalyst
		}
		if r.decidedOn(e, out.Node) {
			// A resumed run's hook, run again: the journal holds this
			// settle's traversal (its analyst's spawn, or its row).
			continue
		}
		row := LedgerRow{Edge: e.ID(), Kind: Analyzes, From: strings.Join(e.Over, "+"), To: e.To, Directive: e.Directive,
			Continuity: ContinuitySteer, Outcome: OutcomeUnpropagated, WorkerID: out.Node}
		if !r.reserve(e) {
			row.Reason = capReason(e)
			r.record(ctx, row, false)
			continue
		}
		task := compose(r.directive(e), analysisPayload(node, out.Node, out.Text))
		r.spawnMu.Lock()
		res, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: e.Analyst, Task: task, Label: e.Analyst})
		if err == nil {
			r.analystRuns[res.WorkerID] = analystRun{edge: e, source: out.Node}
		}
		r.spawnMu.Unlock()
		if err != nil {
			r.release(e)
			row.Reason = "analyst spawn refused: " + err.Error()
			r.record(ctx, row, false)
		}
	}
}

// analysisPayload is what an analyst node's task gives it to analyze:
// the output of worker of node.
func analysisPayload(node string, worker supervise.NodeID, output string) string {
	return fmt.Sprintf("Output of node %s (worker %s):\n%s", node, worker, output)
}

// analysisSource reads back the worker whose output an analyst node's
// task (directive, then analysisPayload) gave it; "" when the task is
// not one.
func analysisSource(directive, task string) supervise.NodeID {
	payload := strings.TrimPrefix(strings.TrimPrefix(task, directive), "\n\n")
	rest, ok := strings.CutPrefix(payload, "Output of node ")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, " (worker ")
	if !ok {
		return ""
	}
	worker, _, ok := strings.Cut(rest, "):\n")
	if !ok {
		return ""
	}
	return supervise.NodeID(worker)
}

// routeFindings delivers an analyst's findings: to the root they are a
// finding event (ledgered with the source worker, the edge's directive
// counted with them); to a worker node they are steered into its latest
// live worker — a lens's findings opened by the edge's directive, an
// analyst node's bare (its directive opened its own task).
func (r *run) routeFindings(ctx context.Context, c *supervise.Coordinator, ar analystRun, out supervise.Output) {
	e := ar.edge
	directive := r.directive(e)
	row := LedgerRow{Edge: e.ID(), Kind: Analyzes, From: strings.Join(e.Over, "+"), To: e.To, Directive: e.Directive, Continuity: ContinuitySteer}
	// The journal says whose findings the row routes (the analyst
	// worker's, node or lens), so that a resume tells an analysis that
	// was routed from one the dead process left in flight, and routes
	// none twice.
	analyst := out.Node
	if e.To == r.root.ID {
		row.WorkerID, row.Bytes, row.Outcome = ar.source, len(directive)+len(out.Text), OutcomeDelivered
		if out.Text == "" {
			row.Outcome, row.Reason = OutcomeEmpty, "analyst returned no findings"
		}
		r.recordOf(ctx, journaledRow{LedgerRow: row, Analyst: analyst})
		return
	}
	var dest supervise.NodeID
	r.mu.Lock()
	workers := slices.Clone(r.bound[e.To])
	r.mu.Unlock()
	for _, id := range slices.Backward(workers) {
		if o, ok := nodeOf(c, id); ok && o.Status.Live() {
			dest = id
			break
		}
	}
	if dest == "" {
		row.Outcome, row.Reason = OutcomeUnpropagated, "no live worker of node "+e.To
		r.recordOf(ctx, journaledRow{LedgerRow: row, Analyst: analyst})
		return
	}
	if out.Text == "" {
		row.WorkerID, row.Outcome, row.Reason = dest, OutcomeEmpty, "analyst returned no findings"
		r.recordOf(ctx, journaledRow{LedgerRow: row, Analyst: analyst})
		return
	}
	instruction := compose(directive, out.Text)
	if !r.lenses[e.Analyst] {
		// An analyst node's directive opened its own task: it told the
		// analyst what to look for, and is no instruction to the
		// destination worker, which gets the bare findings.
		instruction = out.Text
	}
	r.steer(ctx, c, row, dest, e.To, instruction, false, analyst)
}

// steer authorizes and delivers an instruction to a live worker and
// ledgers the traversal: stripped when authorization narrowed it.
// analyst is the analyst worker whose findings the steer routes ("" for
// a root's steer).
func (r *run) steer(ctx context.Context, c *supervise.Coordinator, row LedgerRow, dest supervise.NodeID, node, instruction string, interrupt bool, analyst supervise.NodeID) (supervise.SteerResult, error) {
	row.WorkerID = dest
	if analyst != "" {
		r.routeStarted(dest)
		defer r.routeLedgered(dest)
	}
	charge := row.Kind == Delegates // steers consume the delegates edge's future spawns
	var call string
	if analyst == "" {
		call = kernel.ToolCallID(ctx)
	}
	record := func(row LedgerRow, charge bool) {
		r.recordOf(ctx, journaledRow{LedgerRow: row, Charged: charge, Analyst: analyst, Call: call})
	}
	note := &authNote{edge: row.Edge}
	res, err := c.Steer(context.WithValue(ctx, authNoteKey{}, note), supervise.SteerArgs{WorkerID: dest, Instruction: instruction, Interrupt: interrupt})
	if err != nil {
		row.Outcome, row.Reason = OutcomeUnpropagated, err.Error()
		record(row, false)
		return res, err
	}
	if note.refused != nil {
		row.Outcome, row.Reason = OutcomeUnpropagated, "not authorized: "+note.refused.Error()
		record(row, charge)
		return supervise.SteerResult{}, &supervise.VerbRefusal{Code: "message-not-authorized", Reason: note.refused.Error()}
	}
	if res.Replayed && call != "" && r.steerLedgered(call) {
		// A resumed root's call run again: supervise answered what its
		// first run did and sent nothing; that traversal is ledgered.
		return res, nil
	}
	if analyst != "" && r.opts.afterRouteSteer != nil {
		r.opts.afterRouteSteer()
	}
	sent := instruction
	if note.called {
		sent = note.sent
	}
	row.Bytes = len(sent)
	switch {
	case !res.Delivered:
		row.Outcome, row.Reason, row.Bytes = OutcomeUnpropagated, res.Outcome, 0
	case sent != instruction:
		row.Outcome, row.Reason = OutcomeStripped, "authorization narrowed "+strconv.Itoa(len(instruction))+" composed bytes"
	case sent == "":
		row.Outcome = OutcomeEmpty
	default:
		row.Outcome = OutcomeDelivered
	}
	record(row, charge)
	return res, nil
}

// replayRefusedCall reports whether the refusal of the root's spawn
// call (its tool call id) over edge is one a resumed run's journal
// holds and no call of this process made again yet, claiming it.
func (r *run) replayRefusedCall(call, edge string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := call + "\x00" + edge
	if r.refusedCalls[k] == 0 {
		return false
	}
	r.refusedCalls[k]--
	return true
}

// steerLedgered reports whether the root's steer_agent call (its tool
// call id) has its traversal in the ledger.
func (r *run) steerLedgered(call string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.steerCalls[call]
}

// routeStarted marks a routed finding on its way into worker dest.
func (r *run) routeStarted(dest supervise.NodeID) {
	r.mu.Lock()
	r.routing[dest]++
	r.mu.Unlock()
}

// routeLedgered marks a routed finding into dest ledgered.
func (r *run) routeLedgered(dest supervise.NodeID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routing[dest]--; r.routing[dest] <= 0 {
		delete(r.routing, dest)
	}
	close(r.routeWake)
	r.routeWake = make(chan struct{})
}

// awaitRoutes waits until no routed finding into worker id is between
// its delivery and its row, or ctx ends (the event is handed over
// anyway: Await already took it). The wait is short: the steer's
// delivery and its row are bounded store and hook calls.
func (r *run) awaitRoutes(ctx context.Context, id supervise.NodeID) {
	for {
		r.mu.Lock()
		n, wake := r.routing[id], r.routeWake
		r.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// Driver is the graph's root as a brain sees it: the coordination verbs
// of the one supervised run, with spawn_worker pinned to the graph's
// worker nodes and capped per edge, steer_agent ledgered as the
// delegates edge's mid-run leg, and analysts' settlements returned by
// Await as findings. Its methods are safe for concurrent use.
type Driver struct {
	r *run
	c *supervise.Coordinator
}

// Spawn spawns a worker node: a.Profile names the node, whose canonical
// profile runs with its delegates edge's directive opening a.Task. It is
// When a.AuthoredProfile is set (the root wrote the profile as an
// object), its name names the node and the rest of it is ignored. It is
// refused (a *supervise.VerbRefusal) for a name that is no worker node —
// analyst nodes included — a non-root parent, or an edge whose cap is
// spent (ledgered unpropagated); supervise's own refusals pass through
// and are ledgered unpropagated too, except a continuity refusal
// (resume-no-prior, resume-while-live, resume-with-key): like an
// invalid continuity, that refuses the call's arguments, so nothing
// set out over the edge and no traversal is ledgered. On a resumed run
// a call that replays a journaled spawn (supervise's ReplaysSpawn) is
// never refused by the cap the journal's spawns spent, and a cap
// refusal the journal holds, made again, is not ledgered twice.
func (d *Driver) Spawn(ctx context.Context, a supervise.SpawnArgs) (supervise.SpawnResult, error) {
	r := d.r
	if a.AuthoredProfile != nil {
		// A spawn names a node by profile.name (§3.7 node pinning): an
		// authored profile document is read for its name alone, and the
		// node's canonical profile runs — whatever else it declares is
		// never run.
		var named struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(a.AuthoredProfile, &named) // not an object with a name: no node, refused below
		a.Profile, a.AuthoredProfile = named.Name, nil
	}
	if a.Parent != "" {
		return supervise.SpawnResult{}, &supervise.VerbRefusal{Code: "not-graph-topology", Reason: "a graph spawns from its root only; leave parent empty"}
	}
	e, ok := r.delegatesTo[a.Profile]
	if !ok {
		return supervise.SpawnResult{}, &supervise.VerbRefusal{Code: "not-a-worker-node",
			Reason: fmt.Sprintf("%q is not a worker node of this graph; spawn one of %s by id", a.Profile, strings.Join(r.order, ", "))}
	}
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	row := LedgerRow{Edge: e.ID(), Kind: Delegates, From: e.From, To: e.To, Directive: e.Directive}
	r.mu.Lock()
	prior := len(r.bound[e.To]) > 0
	r.mu.Unlock()
	// The call's continuity overrides the edge's; a resume edge's first
	// spawn has nothing to resume and starts fresh.
	switch {
	case a.Continuity == ContinuityResume, a.Continuity == "" && e.Continuity == ContinuityResume && prior:
		row.Continuity, a.Continuity = ContinuityResume, string(supervise.ContinuityResume)
	case a.Continuity == "" || a.Continuity == ContinuityFresh:
		// Spelled out: the graph decided, and supervise must not read an
		// omitted continuity as a profile's default.
		row.Continuity, a.Continuity = ContinuityFresh, ContinuityFresh
	default:
		return supervise.SpawnResult{}, &supervise.VerbRefusal{Code: "invalid-continuity", Reason: fmt.Sprintf("continuity %q is fresh or resume", a.Continuity)}
	}
	directive := r.directive(e)
	payload := a.Task
	a.Task = compose(directive, payload)
	// A resumed run's cap counts the spawns the dead process made; the
	// driver's calls that replay them are no new traversals, and pass.
	replay := d.c.ReplaysSpawn(ctx, supervise.SpawnArgs{Label: a.Label, Profile: a.Profile, Task: a.Task})
	if !replay && r.capReached(e) {
		// A refusal the journal holds, made again by a resumed driver,
		// is ledgered once.
		if !r.replayRefusal(e) {
			row.Outcome, row.Reason = OutcomeUnpropagated, capReason(e)
			r.record(ctx, row, false)
		}
		return supervise.SpawnResult{}, &supervise.VerbRefusal{Code: "edge-cap-exhausted",
			Reason: fmt.Sprintf("%s spent its %d traversals; the cyclic-graph backstop refuses this spawn", e.ID(), e.limit())}
	}
	res, err := d.c.Spawn(ctx, a)
	if code, _ := supervise.CodeOf(err); code == supervise.CodeResumeNoPrior || code == supervise.CodeResumeWhileLive || code == supervise.CodeResumeWithKey {
		return res, err
	}
	if err != nil {
		// A resumed root's call run again whose refusal the journal
		// holds is ledgered once, as a cap refusal is.
		call := kernel.ToolCallID(ctx)
		if call != "" && r.replayRefusedCall(call, row.Edge) {
			return res, err
		}
		row.Outcome, row.Reason = OutcomeUnpropagated, "spawn refused: "+err.Error()
		r.recordOf(ctx, journaledRow{LedgerRow: row, Call: call})
		return res, err
	}
	row.WorkerID = res.WorkerID
	if res.Replayed {
		// A resumed run's replay of a journaled spawn: its traversal is
		// in the restored ledger already, and it is bound.
		return res, nil
	}
	if res.Resumed == supervise.ResumedCompleted {
		row.Outcome, row.Reason = OutcomeUnpropagated, "deduplicated to a completed result; nothing crossed"
		r.record(ctx, row, false)
		return res, nil
	}
	r.mu.Lock()
	r.bound[e.To] = append(r.bound[e.To], res.WorkerID)
	r.mu.Unlock()
	row.Bytes, row.Outcome = len(directive)+len(payload), OutcomeDelivered
	if row.Bytes == 0 {
		row.Outcome, row.Reason = OutcomeEmpty, "no directive text and no task payload"
	}
	r.record(ctx, row, true)
	return res, nil
}

// Steer sends an instruction to a live worker node: the mid-run leg of
// its delegates edge, one traversal (it spends the edge's cap, never
// refused by it), passed through Options.AuthorizeMessage first. An
// analyst worker is never steered.
func (d *Driver) Steer(ctx context.Context, a supervise.SteerArgs) (supervise.SteerResult, error) {
	o, err := d.c.Observe(a.WorkerID)
	if err != nil {
		return supervise.SteerResult{}, err
	}
	e, ok := d.r.delegatesTo[o.Profile]
	if !ok {
		return supervise.SteerResult{}, &supervise.VerbRefusal{Code: "not-a-worker-node", Reason: fmt.Sprintf("worker %s runs %q, which is no worker node; analysts receive no work", a.WorkerID, o.Profile)}
	}
	row := LedgerRow{Edge: e.ID(), Kind: Delegates, From: e.From, To: e.To, Directive: e.Directive, Continuity: ContinuitySteer}
	return d.r.steer(ctx, d.c, row, a.WorkerID, e.To, a.Instruction, a.Interrupt, "")
}

// Await returns the next event of the run (supervise's await_event); an
// analyst's settlement comes back with Kind EventFinding.
//
// A lens's finding comes back once the graph ledgered its route: supervise
// queues an analyst's settlement for Await before its settlement hook
// runs, and the hook is what ledgers the analyzes row, so without the
// wait a driver acting on the finding (a spawn, a steer) could ledger
// its traversal first — and a resume would restore that order. So does
// an event of a worker a finding was steered into, once that steer's
// row is ledgered: the worker can answer the steer and settle first.
func (d *Driver) Await(ctx context.Context, a supervise.AwaitArgs) (supervise.AwaitResult, error) {
	res, err := d.c.Await(ctx, a)
	if err == nil && res.Event != nil && res.Event.Kind == supervise.EventFinding {
		d.r.awaitLensHook(ctx, *res.Event)
	}
	if err == nil && res.Event != nil {
		// A routed finding's destination can settle on it before the
		// graph ledgered the steer.
		d.r.awaitRoutes(ctx, res.Event.WorkerID)
	}
	if err != nil || res.Event == nil || res.Event.Kind != supervise.EventSettled {
		return res, err
	}
	d.r.spawnMu.Lock()
	_, isAnalyst := d.r.analystRuns[res.Event.WorkerID]
	d.r.spawnMu.Unlock()
	if isAnalyst {
		ev := *res.Event
		ev.Kind = EventFinding
		res.Event = &ev
	}
	return res, nil
}

// awaitLensHook waits until the settlement hook of ev's lens analyst
// returned, when the graph routes that lens's findings and this process
// settled it (a replayed finding's hook ran before the driver drove; an
// online detector's finding has no hook). The hook's store calls are
// bounded; ctx ending stops the wait, and the event is handed over
// anyway: Await already took it.
func (r *run) awaitLensHook(ctx context.Context, ev supervise.Event) {
	if ev.Replayed {
		return
	}
	if _, ok := r.analyzeBy[ev.Lens]; !ok || !r.lenses[ev.Lens] {
		return
	}
	select {
	case <-r.lensHook(ev.WorkerID):
	case <-ctx.Done():
	}
	r.mu.Lock()
	delete(r.lensHooks, ev.WorkerID)
	r.mu.Unlock()
}

// lensHook is the channel closed when lens analyst id's settlement hook
// returned, made by whichever of the hook and Await comes first.
func (r *run) lensHook(id supervise.NodeID) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.lensHooks[id]
	if !ok {
		ch = make(chan struct{})
		r.lensHooks[id] = ch
	}
	return ch
}

// lensHookReturned marks lens analyst id's settlement hook returned.
func (r *run) lensHookReturned(id supervise.NodeID) {
	ch := r.lensHook(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-ch: // a hook run again (a resumed run's) marks it once
	default:
		close(ch)
	}
}

// RunAnalyst is supervise's run_analyst (served when the root declares
// it), refused (code lens-runs-on-an-edge) for a lens an analyzes edge
// names: that lens runs along its edge alone, within the edge's cap —
// its findings are routed and ledgered as the edge's traversals, so a
// run the root started would cross the edge uncharged (past its cap, or
// over a node the edge is not over).
func (d *Driver) RunAnalyst(ctx context.Context, a supervise.RunAnalystArgs) (supervise.RunAnalystResult, error) {
	if e, ok := d.r.analyzeBy[a.Kind]; ok && d.r.lenses[a.Kind] {
		return supervise.RunAnalystResult{}, &supervise.VerbRefusal{Code: "lens-runs-on-an-edge",
			Reason: fmt.Sprintf("lens %q runs along %s on each settle of %s, within its cap; run another lens, or read its findings from await_event", a.Kind, e.ID(), strings.Join(e.Over, ", "))}
	}
	return d.c.RunAnalyst(ctx, a)
}

// DefineAnalyst is supervise's define_analyst (served when the root
// declares it), refused (code ambiguous-analyst) for an id that is an
// analyst node of this graph: §3.7 refuses an id that is both node and
// lens as ambiguous, and a lens defined at run time under that id would
// be exactly that — its findings and the node's would arrive under one
// name.
func (d *Driver) DefineAnalyst(ctx context.Context, l supervise.Lens) (supervise.DefineAnalystResult, error) {
	if id := strings.TrimSpace(l.ID); d.r.analysts[id].Profile != nil {
		return supervise.DefineAnalystResult{}, &supervise.VerbRefusal{Code: "ambiguous-analyst",
			Reason: fmt.Sprintf("%q is an analyst node of this graph; an id that is both a node and a lens is ambiguous — choose another id", id)}
	}
	return d.c.DefineAnalyst(ctx, l)
}

// AnswerQuestion is supervise's answer_question, with an answer passed
// through Options.AuthorizeMessage first (to the asking worker; supervise
// calls it): the product may narrow it or refuse it. Answers travel no
// edge, so they are not ledgered.
func (d *Driver) AnswerQuestion(ctx context.Context, a supervise.AnswerArgs) (supervise.AnswerResult, error) {
	// supervise passes the answer through Options.AuthorizeMessage
	// (r.authorizeMessage) and refuses it message-not-authorized.
	return d.c.AnswerQuestion(ctx, a)
}

// ListQuestions is supervise's list_questions.
func (d *Driver) ListQuestions() supervise.QuestionList { return d.c.ListQuestions() }

// Observe is supervise's observe_agent.
func (d *Driver) Observe(id supervise.NodeID) (supervise.Observation, error) { return d.c.Observe(id) }

// Submit is supervise's submit_result: the root's own result, judged by
// the graph's deliverable.
func (d *Driver) Submit(ctx context.Context, a supervise.SubmitArgs) (supervise.SubmitResult, error) {
	return d.c.Submit(ctx, a)
}

// Stop is supervise's stop.
func (d *Driver) Stop(a supervise.StopArgs) (supervise.StopResult, error) { return d.c.Stop(a) }

// ReadJournal is supervise's read_journal; the graph's edge records are
// in it (kind edge).
func (d *Driver) ReadJournal(a supervise.JournalArgs) supervise.JournalPage {
	return d.c.ReadJournal(a)
}

// Readout returns the balances of the graph's one conserved pool: on
// each channel free + reserved + committed is the graph budget's total,
// a resumed run's replayed spends and never-settled ceilings included.
func (d *Driver) Readout() ledger.Readout { return d.c.Readout() }

// Ledger returns the edge ledger so far, in occurrence order.
func (d *Driver) Ledger() []LedgerRow {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	return slices.Clone(d.r.ledger)
}

// NodeTools returns the root manager's own product tools
// (supervise.Options.ResolveSupervisorTools, which a graph forwards),
// resolved once and journaled call by call: what a caller's Brain offers
// its model beside Tools. The router brain offers them itself. task is
// the root's task, as Brain.Drive was given it.
func (d *Driver) NodeTools(ctx context.Context, task string) ([]contract.Tool, error) {
	return d.c.NodeTools(ctx, task)
}

// ExtraTools returns the root manager's work tools
// (supervise.Options.ExtraTools, which a graph forwards), each call
// journaled before it runs and after: what a caller's Brain offers its
// model beside Tools. The router brain offers them itself, and its
// resumed conversation's re-run call is answered from the journal (or in
// doubt), not run again; a caller's Brain resumes as it chooses, and
// each call it makes runs.
func (d *Driver) ExtraTools() []contract.Tool {
	return d.c.ExtraTools()
}

// Tools returns the coordination verbs as tools, as supervise names
// them, with spawn_worker, steer_agent, answer_question, run_analyst,
// define_analyst and await_event served by the Driver.
func (d *Driver) Tools() ([]contract.Tool, error) {
	base, err := d.c.Tools()
	if err != nil {
		return nil, err
	}
	own := map[string]contract.Tool{}
	var errs []error
	add := func(t contract.Tool, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		own[t.Name] = t
	}
	if ss, err := supervise.SpawnArgsSchema(); err != nil {
		errs = append(errs, err)
	} else {
		add(supervise.NewVerb(supervise.VerbSpawnWorker, "Spawn a worker node of this graph by its id (profile: the id, or a profile object whose name is the id — only the name is read), on a task; the node's own profile runs. Returns workerId, or {error, reason} when refused.", d.Spawn,
			tools.WithInputSchema(ss)))
	}
	add(supervise.NewVerb(supervise.VerbSteerAgent, "Send an instruction to a live worker node.", d.Steer))
	add(supervise.NewVerb(supervise.VerbAnswerQuestion, "Decide a question: answer, deferReason or escalateTo (parent|user). A decision resolves the question only when delivered to its asker.", d.AnswerQuestion))
	add(supervise.NewVerb(supervise.VerbRunAnalyst, "", d.RunAnalyst))
	add(supervise.NewVerb(supervise.VerbDefineAnalyst, "", d.DefineAnalyst))
	add(supervise.NewVerb(supervise.VerbAwaitEvent, "Wait for the next worker settlement or analyst finding (in recorded order): returns {event}, {idle:true} when nothing is live, or {pending:true, live} after the bounded wait (both, when kinds were named, with queued: the other kinds' events still waiting, by kind).", d.Await))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]contract.Tool, 0, len(base))
	for _, t := range base {
		if o, ok := own[t.Name]; ok {
			if t.Name == supervise.ToolPrefix+supervise.VerbRunAnalyst {
				// supervise's words (its menu of lenses), and the graph's rule.
				o.Description = t.Description + " A lens an analyzes edge of this graph names runs along that edge only, and is refused here."
			}
			if t.Name == supervise.ToolPrefix+supervise.VerbDefineAnalyst {
				o.Description, o.InputSchema = t.Description+" An id that is an analyst node of this graph is refused (ambiguous-analyst).", t.InputSchema
			}
			t = o
		}
		out = append(out, t)
	}
	return out, nil
}

// authNoteKey carries an authNote on the context of the graph's own
// steer (run.steer) to r.authorizeMessage.
type authNoteKey struct{}

// authNote is what Options.AuthorizeMessage made of one graph steer:
// the edge it travels, and the hook's answer.
type authNote struct {
	edge    string
	called  bool
	sent    string
	refused error
}

// authorizeMessage is supervise.Options.AuthorizeMessage for a graph
// run: Options.AuthorizeMessage over the graph's Message (the
// destination's node, the edge the graph's own steer travels: "" for an
// answer or a steer from another process), its answer noted for the
// steer's ledger row (stripped, or unpropagated when refused).
func (r *run) authorizeMessage(ctx context.Context, m supervise.DownMessage) (string, error) {
	note, _ := ctx.Value(authNoteKey{}).(*authNote)
	gm := Message{WorkerID: m.WorkerID, Node: m.Profile, Instruction: m.Instruction}
	if note != nil && m.Kind == supervise.DownSteer {
		gm.Edge = note.edge
	}
	sent, err := r.opts.AuthorizeMessage(ctx, gm)
	if note != nil && m.Kind == supervise.DownSteer {
		note.called, note.sent, note.refused = true, sent, err
	}
	return sent, err
}

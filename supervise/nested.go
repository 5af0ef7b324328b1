package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// RuntimeManager names where a nested manager runs: its brain in this
// process, driving a Coordinator of its own node (§3.6 "ids route at
// any depth"). Its spawn record carries it, so a resumed run knows the
// node is a manager to drive again rather than work in doubt.
const RuntimeManager = "manager"

// Nested managers (§3.6, §15 behaviours 36–55). A worker whose profile
// declares coordination verbs is a manager itself: it runs not on the
// Executor but as a brain (Options.ManagerBrain, else the RouterBrain
// on Options.Router) that drives a Coordinator bound to its node — a
// view of the same run. Through it spawn_worker admits children under
// the node ("<node>:s<seq>", MaxDepth enforced), reserved from the pool
// carved from its reservation (carve.go) and counted tree-wide against
// MaxLiveWorkers, under keys and assignment ordinals of its own (a key
// it uses names no assignment of another manager); await_event,
// list_questions and answer_question see only its own children's
// events; observe_agent and steer_agent reach its subtree; ask_parent
// and escalations go to its parent manager. Its children's contexts
// are its own, so cancelling it cancels its subtree; when its brain
// returns its children are cancelled and joined before it settles,
// with what its brain spent, through the same completion gate as any
// worker.

// IsManagerProfile reports whether p declares any coordination verb
// (ToolPrefix + verb): a worker of that profile is a nested manager.
func IsManagerProfile(p *profile.Profile) bool {
	if p == nil {
		return false
	}
	for name, on := range p.Tools {
		if on && strings.HasPrefix(name, ToolPrefix) {
			return true
		}
	}
	return false
}

// IsRoot reports whether c is the run's root manager's view.
func (c *Coordinator) IsRoot() bool { return c.parent == nil }

// Self returns the node this view manages: the run's root, or a nested
// manager's node.
func (c *Coordinator) Self() NodeID { return c.self }

// managerExecFor returns the executor that runs a worker of profile p
// as a nested manager under c, nil when p declares no coordination
// verb (the worker runs on the run's Executor). A manager profile no
// brain can drive is refused.
func (c *Coordinator) managerExecFor(p *profile.Profile) (Executor, error) {
	if !IsManagerProfile(p) {
		return nil, nil
	}
	if c.managerBrain != nil {
		if b := c.managerBrain(p); b != nil {
			return &nestedManager{brain: b}, nil
		}
	}
	switch p.Harness {
	case "", "cli-base":
	default:
		return nil, c.refusal(CodePreflightRefused, "manager-brain", "no brain drives a nested manager of harness "+string(p.Harness)+" (set Options.ManagerBrain)")
	}
	if c.router == nil {
		return nil, c.refusal(CodePreflightRefused, "manager-brain", "a nested cli-base manager needs Options.Router or Options.ManagerBrain")
	}
	rb, err := NewRouterBrain(p, c.router, c.maxTurns)
	if err != nil {
		return nil, c.refusal(CodePreflightRefused, "manager-brain", err.Error())
	}
	return &nestedManager{brain: rb}, nil
}

// viewOf returns the view of nested manager id, made when missing.
func (c *Coordinator) viewOf(id NodeID) *Coordinator {
	if id == "" || id == c.root.self {
		return c.root
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.viewOfLocked(id)
}

func (c *Coordinator) viewOfLocked(id NodeID) *Coordinator {
	if id == "" || id == c.root.self {
		return c.root
	}
	if v := c.views[id]; v != nil {
		return v
	}
	parent := c.root
	if p, ok := id.Parent(); ok && p != c.root.self {
		parent = c.viewOfLocked(p)
	}
	v := &Coordinator{core: c.core, self: id, parent: parent, wake: make(chan struct{})}
	c.views[id] = v
	return v
}

// viewFor returns the view of the manager whose child node id is: the
// one its settlement and questions go to.
func (c *Coordinator) viewFor(id NodeID) *Coordinator {
	p, _ := id.Parent()
	return c.viewOf(p)
}

// reaches reports whether id is this manager's own node or in its
// subtree: what a nested manager may observe and steer. The root
// reaches every node.
func (c *Coordinator) reaches(id NodeID) bool {
	return c.parent == nil || id.within(c.self)
}

// nestedManager is the Executor of a nested manager's worker: its brain
// drives the view of its node.
type nestedManager struct {
	brain Brain
}

// Runtime names the nested manager's runtime (RuntimeManager).
func (m *nestedManager) Runtime() string { return RuntimeManager }

// ReadsInbox: a steer to a nested manager joins its brain between
// turns when its brain reads its inbox (the RouterBrain does).
func (m *nestedManager) ReadsInbox() bool {
	r, ok := m.brain.(InboxReader)
	return ok && r.ReadsInbox()
}

// ReportsUsage: its brain's model turns are metered.
func (m *nestedManager) ReportsUsage() bool { return true }

// Execute is never called through the run's executor path: start runs
// a nested manager with runManager, which needs the parent's view.
func (m *nestedManager) Execute(ctx context.Context, w Work) (WorkResult, error) {
	return WorkResult{}, fmt.Errorf("supervise: a nested manager runs under its parent's coordinator, not as an executor (%s)", w.Node)
}

// runManager drives nested manager w.Node's brain on the view of its
// node, then cancels and joins its children, and returns its result:
// the text it submitted (else its brain's final text), spending what
// its brain metered.
func (c *Coordinator) runManager(ctx context.Context, m *nestedManager, w Work) (WorkResult, error) {
	v := c.viewOf(w.Node)
	brainCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	c.mu.Lock()
	cancelWork := v.cancelWork // made by start
	if cancelWork == nil {
		v.workCtx, cancelWork = context.WithCancelCause(ctx)
		v.cancelWork = cancelWork
	}
	v.stopFn, v.brainCtx = stop, brainCtx
	v.rootInbox, v.turnObs, v.reserved = w.Inbox, w.Observer, reservation{w.Reserved}
	c.mu.Unlock()
	// Driven again on resume, it is re-offered the steers an earlier
	// process accepted for it and never acknowledged, as the root is,
	// and it still waits on the questions its conversation asked its
	// parent: they are open there again.
	if w.Inbox != nil {
		v.reofferSteers(context.WithoutCancel(ctx), w.Inbox)
	}
	v.reofferAsked()
	report, err := drive(brainCtx, m.brain, v, w.Task)
	// Its brain takes no more turns: a steer still waiting is not_live,
	// and a re-offered one is acknowledged before it settles.
	v.closeManagerInbox(ctx)
	if errors.Is(context.Cause(brainCtx), ErrStopped) && (err == nil || errors.Is(err, ErrStopped) || isCancelledRun(err)) {
		err = nil // it stopped itself
	}
	// Its brain returned: its children are cancelled and get a bounded
	// time to settle before it does (the join barrier).
	cancelWork(errors.New("supervise: the manager " + string(w.Node) + " returned"))
	v.joinChildren(c.settleGrace)
	c.mu.Lock()
	text, sub, mt := report.Text, v.submitted, v.meter
	c.mu.Unlock()
	res := WorkResult{Text: text, Spent: mt.spend()}
	if sub != nil {
		res.Text = sub.Text
	}
	if u := report.Metered; u != nil {
		res.Spent = addSpend(res.Spent, driverSpend(*u))
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return res, err
}

func isCancelledRun(err error) bool {
	var re *kernel.RunError
	return errors.As(err, &re) && re.Status == "cancelled"
}

// joinChildren waits, at most grace, until every child this view
// started has ended.
func (c *Coordinator) joinChildren(grace time.Duration) {
	c.mu.Lock()
	done := c.kids
	c.mu.Unlock()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, d := range done {
		select {
		case <-d:
		case <-timer.C:
			return
		}
	}
}

// spend is what a nested manager's brain metered: its turns' tokens and
// dollars, and no iteration (driverSpend); a channel some turn did not
// report is unknown.
func (m meter) spend() ledger.Spend {
	var sp ledger.Spend
	if !m.iterationsUnknown {
		iterations := m.iterations
		sp.Iterations = &iterations
	}
	t := m.tokens
	switch {
	case !m.tokensUnknown:
		sp.Tokens = &t
	case t > 0:
		sp.TokensFloor = &t // unknown, but at least what was reported
	}
	if !m.usdUnknown {
		u := m.microUSD
		sp.MicroUSD = &u
	}
	return sp
}

func addSpend(a, b ledger.Spend) ledger.Spend {
	add := func(x, y *int64) *int64 {
		if x == nil || y == nil {
			return nil
		}
		v := *x + *y
		return &v
	}
	sp := ledger.Spend{Tokens: add(a.Tokens, b.Tokens), Iterations: add(a.Iterations, b.Iterations), MicroUSD: add(a.MicroUSD, b.MicroUSD)}
	if sp.Tokens == nil {
		// Unknown: at least what each side knows of (its tokens, or
		// its receipt's floor).
		if f := tokensAtLeast(a) + tokensAtLeast(b); f > 0 && f <= ledger.MaxQuantity {
			sp.TokensFloor = &f
		}
	}
	return sp
}

// tokensAtLeast is the tokens s is known to have spent at least: its
// tokens, else its valid floor, else 0.
func tokensAtLeast(s ledger.Spend) int64 {
	switch {
	case s.Tokens != nil && *s.Tokens >= 0 && *s.Tokens <= ledger.MaxQuantity:
		return *s.Tokens
	case s.Tokens == nil && s.TokensFloor != nil && *s.TokensFloor >= 0 && *s.TokensFloor <= ledger.MaxQuantity:
		return *s.TokensFloor
	}
	return 0
}

// meterNested charges a nested manager's model turn to its own node:
// kept until it settles (its reservation covers it), never charged to
// the pool twice.
func (c *Coordinator) meterNested(sp ledger.Spend) {
	c.mu.Lock()
	c.meterNestedLocked(sp)
	c.mu.Unlock()
	// Its carved pool sees it too: its children have that much less.
	c.scope.ObserveNode(c.self, sp)
}

func (c *Coordinator) meterNestedLocked(sp ledger.Spend) { c.meter.add(sp) }

// nestedMeter is a nested manager's TurnMeter: its turns go to its
// worker log and progress (its Work.Observer) and are metered to its
// node.
type nestedMeter struct {
	c *Coordinator
	passObserver
	// journal, when set, journals the manager's conversation and carries
	// each turn's spend (meterTurn).
	journal *transcriptJournal
}

var _ kernel.ToolObserver = nestedMeter{}

func (m nestedMeter) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	err := m.passObserver.TurnEnded(ctx, t)
	return errors.Join(err, m.c.meterTurn(context.WithoutCancel(ctx), t.Usage, m.journal))
}

// askUp raises a nested manager's own question (ask_parent) with its
// parent manager and, in the background, hands the decision to deliver
// once it comes — or nothing, when the manager ends first. It returns
// the id of the question as asked at the parent. (A child's question it
// escalates is linked to its asker instead: decide.)
func (c *Coordinator) askUp(a AskArgs, deliver func(qid string, d Decision)) string {
	ctx := c.workContext()
	q, reply := c.parent.addQuestion(ctx, a, true, nil)
	go func() {
		select {
		case d := <-reply:
			deliver(q.ID, d)
		case <-ctx.Done():
			// Decided as the manager ended: the decision was said
			// delivered, so it is handed on. Otherwise nobody waits for
			// it now, here or where its parent escalated the question.
			if d, ok := c.decidedOrAbandon(q, reply); ok {
				deliver(q.ID, d)
			}
		}
	}()
	return q.ID
}

// reattachKeyed returns the nested manager a resumed run drives again
// whose key a keyed spawn the scope refused duplicate-key names, once:
// the resumed brain repeating its spawn re-attaches to it.
func (c *Coordinator) reattachKeyed(req SpawnRequest, err error) (NodeID, bool) {
	var r *Refusal
	if req.Key == "" || !errors.As(err, &r) || r.Code != CodeDuplicateKey {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.reattach {
		parent := req.Parent
		if parent == "" {
			parent = c.scope.Root()
		}
		if info, ok := c.scope.Node(id); ok && info.Key == req.Key && info.Parent == parent {
			delete(c.reattach, id)
			return id, true
		}
	}
	return "", false
}

// turnGate is a nested manager's router loop's gate: a pool of what is
// left of its node's reservation once its metered turns (a resumed
// run's included) are taken off, from which each model turn reserves a
// token (and a micro-dollar when its reservation caps dollars) and
// settles what it used. Its iterations are not gated: a manager's turn
// counts no iteration (driverSpend), so its node's iteration ceiling
// never stops its brain. A turn the gate refuses is not made (the loop
// stops StopBudget), so the manager overshoots its ceiling by at most
// its last turn's use. The gate only bounds the loop: the node's spend
// is what its turns metered, settled with it. When its children draw on
// its carved pool (carve.go), what they hold is not free for its turns:
// the gate also holds each live child's token and dollar reservation
// until the child settles, and what its settled children were charged
// (Scope.turnGate).
func (c *Coordinator) turnGate() (*ledger.Pool, ledger.Budget, error) {
	c.mu.Lock()
	r, m := c.reserved, c.meter
	c.mu.Unlock()
	left := func(ceiling *int64, used int64, unknown bool) *int64 {
		if ceiling == nil {
			v := int64(ledger.MaxQuantity)
			return &v
		}
		v := *ceiling - used
		if unknown || v < 0 {
			v = 0
		}
		return &v
	}
	one := int64(1)
	gate := ledger.Budget{Tokens: left(r.Tokens, m.tokens, m.tokensUnknown), Iterations: left(nil, 0, false)}
	// The loop's per-turn reserve needs an iteration; the gate's
	// iterations are unbounded, so it never refuses a turn for them.
	reserve := ledger.Budget{Tokens: &one, Iterations: &one}
	if r.MicroUSD != nil {
		gate.MicroUSD, reserve.MicroUSD = left(r.MicroUSD, m.microUSD, m.usdUnknown), &one
	}
	p, err := c.scope.turnGate(c.self, gate, c.now)
	if err != nil {
		return nil, ledger.Budget{}, fmt.Errorf("supervise: the nested manager %s's turn gate: %w", c.self, err)
	}
	return p, reserve, nil
}

// reservation is a nested manager's node's ceiling, which its brain's
// turns are held to (turnGate).
type reservation struct{ ledger.Budget }

// decisionText is a decision as the manager that asked reads it between
// its turns.
func decisionText(qid string, d Decision) string {
	switch d.Kind {
	case "answer":
		return "Answer to your question " + qid + ": " + d.Answer
	case "defer":
		return "Your question " + qid + " was deferred: " + d.DeferReason
	}
	return "Your question " + qid + " was escalated to " + d.EscalateTo
}

// redriveManagers drives again, under their ids, the nested managers a
// resumed run's journal left live, in admission order; a manager no
// brain can drive now is marked in doubt.
func (c *Coordinator) redriveManagers() {
	c.mu.Lock()
	ids := c.redrive
	c.redrive = nil
	// Each counts as its parent's running child from now on, before any
	// of them starts: a manager driven again whose brain awaits a child
	// manager not yet started again must not be answered idle.
	for _, id := range ids {
		c.viewOfLocked(parentOrRoot(id, c.root.self)).inflight++
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.redriveOne(id)
		c.viewFor(id).releaseInflight() // start took over the mark, or it was not driven
	}
}

// redriveOne drives nested manager id again (see redriveManagers).
func (c *Coordinator) redriveOne(id NodeID) {
	parent := c.viewFor(id)
	info, ok := c.scope.Node(id)
	if !ok || !live(info) {
		return
	}
	c.mu.Lock()
	w := c.workers[id]
	c.mu.Unlock()
	var p *profile.Profile
	if w != nil {
		p = w.profile
	}
	if p == nil {
		p = c.profiles[info.Profile]
	}
	exec, err := parent.managerExecFor(p)
	if exec == nil || err != nil {
		c.logger.Warn("supervise: a resumed nested manager cannot be driven again; it stays in doubt", "node", id, "err", err)
		if merr := c.scope.MarkInDoubt(id); merr == nil && w != nil {
			c.mu.Lock()
			w.reason = "no brain drives the nested manager on resume"
			c.mu.Unlock()
		}
		return
	}
	if w == nil {
		return
	}
	if info.Key != "" {
		c.mu.Lock()
		if c.reattach == nil {
			c.reattach = map[NodeID]bool{}
		}
		c.reattach[id] = true
		c.mu.Unlock()
	}
	parent.start(id, p, w.task, info.Reserved, exec)
}

package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// leadProfile is a worker profile that is a manager itself: it declares
// the coordination verbs, so a worker of it is a nested manager.
func leadProfile(t *testing.T, verbs ...string) *profile.Profile {
	t.Helper()
	tools := map[string]bool{}
	for _, v := range verbs {
		tools[supervise.ToolPrefix+v] = true
	}
	doc, _ := json.Marshal(map[string]any{"name": "lead", "harness": "cli-base", "model": map[string]any{"default": "scripted/lead"},
		"prompt": map[string]any{"systemPrompt": "You lead writers."}, "tools": tools})
	return mustProfile(t, string(doc))
}

var leadVerbs = []string{supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbObserveAgent, supervise.VerbSteerAgent,
	supervise.VerbSubmitResult, supervise.VerbStop, supervise.VerbAskParent, supervise.VerbListQuestions, supervise.VerbAnswerQuestion}

// rootSpawningLead spawns one lead with a budget of its own, awaits it
// and answers. The lead's grant (2,000 tokens, 10 iterations, $0.50) is
// what its own turns and its writers' reservations (1,000 tokens, 1
// iteration, $0.10 each) draw on.
func rootSpawningLead() *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
			"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10, "maxUsd": 0.5}}), managerUsage(10, 0, 0.0001)),
		turn(call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0.0001)),
		turn(scripted.Text("root: the lead delivered"), managerUsage(10, 0, 0.0001)),
	}})
}

// sequentialLead spawns alpha, awaits it, spawns beta, awaits it and
// answers DONE: a deterministic journal order under the lead.
func sequentialLead() *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("l1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}), managerUsage(7, 3, 0.00001)),
		turn(call("l2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(7, 3, 0.00001)),
		turn(call("l3", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta", "label": "b"}), managerUsage(7, 3, 0.00001)),
		turn(call("l4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(7, 3, 0.00001)),
		turn(scripted.Text("lead: alpha DONE, beta half"), managerUsage(7, 3, 0.00001)),
	}})
}

// nestedOptions are baseOptions with a lead profile whose brain is a
// router brain on leadModel (fresh per lead).
func nestedOptions(t *testing.T, exec supervise.Executor, root contract.ChatModel, leadModel func() contract.ChatModel) supervise.Options {
	o := baseOptions(t, exec, root)
	o.Budget.Iterations = i64(20)
	o.Profiles["lead"] = leadProfile(t, leadVerbs...)
	o.ManagerBrain = func(p *profile.Profile) supervise.Brain {
		b, err := supervise.NewRouterBrain(p, leadModel(), 0)
		if err != nil {
			t.Errorf("lead brain: %v", err)
			return nil
		}
		return b
	}
	return o
}

func checkConservedReadout(t *testing.T, r ledger.Readout) {
	t.Helper()
	for ch, b := range r.Channels {
		if b.Free+b.Reserved+b.Committed != b.Total {
			t.Errorf("pool %s: free %d + reserved %d + committed %d != total %d", ch, b.Free, b.Reserved, b.Committed, b.Total)
		}
	}
}

// §3.6 "ids route at any depth", behaviours 36, 41, 42: a three-level
// tree (root → lead → writers) on the scripted provider. The lead is a
// nested manager: its children are "<lead>:s<seq>" at depth 2, reserved
// from the pool carved from its grant (the run's one pool holds its
// ticket), settled to the lead (its await_event returns them), and the
// lead settles to the root through the completion gate with what its
// own brain spent. Workers run on the executor; the lead does not.
func TestNestedManagerThreeLevelTreeOnePool(t *testing.T) {
	exec := newCounting(t, workerProvider(t))
	o := nestedOptions(t, exec, rootSpawningLead(), func() contract.ChatModel { return sequentialLead() })
	o.RunDir = t.TempDir()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" || !strings.Contains(res.Winner.Text, "DONE") {
		t.Fatalf("result %+v winner %+v, want the lead run1:s1 delivered", res, res.Winner)
	}
	type row struct {
		ID     supervise.NodeID
		Parent supervise.NodeID
		Depth  int
		State  supervise.State
		Deliv  bool
	}
	var got []row
	for _, n := range res.Tree {
		got = append(got, row{n.ID, n.Parent, n.Depth, n.State, n.Delivered})
	}
	want := []row{
		{"run1:s1", "run1", 1, supervise.StateDone, true},
		{"run1:s1:s2", "run1:s1", 2, supervise.StateDone, true},
		{"run1:s1:s3", "run1:s1", 2, supervise.StateDone, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if exec.count("alpha") != 1 || exec.count("beta") != 1 {
		t.Errorf("executions alpha %d beta %d, want 1 and 1 (the lead runs no executor)", exec.count("alpha"), exec.count("beta"))
	}
	// The lead's own spend: five turns of 10 tokens and, a manager's
	// turns counting no iteration, 0 iterations (known).
	lead := res.Tree[0].Settlement
	if lead == nil || lead.Spent.Tokens == nil || *lead.Spent.Tokens != 50 || lead.Spent.Iterations == nil || *lead.Spent.Iterations != 0 {
		t.Errorf("lead settlement %+v, want 50 tokens in 0 iterations", lead)
	}
	// Iterations: alpha's and beta's turns, one each.
	if res.Spent.Iterations != 2 || !res.Spent.IterationsKnown {
		t.Errorf("spent %d iterations (known %v), want 2: the writers' turns", res.Spent.Iterations, res.Spent.IterationsKnown)
	}
	// Spend: root turns 30 tokens; lead 50; alpha 120; beta 60.
	if res.Spent.Tokens != 260 || !res.Spent.TokensKnown || !res.Spent.USDKnown {
		t.Errorf("spent %+v, want 260 tokens, all known", res.Spent)
	}
	if res.Breakdown.ChildWork.Tokens != 230 || res.Breakdown.DriverInference.Tokens != 30 {
		t.Errorf("breakdown %+v, want child work 230 and driver 30", res.Breakdown)
	}
}

// rootBrainLeadGranted is a caller-owned root brain that spawns one
// lead granting it grant (nil: the per-worker budget), the budget its
// whole subtree draws on, runs check while it is live, and awaits it.
func rootBrainLeadGranted(t *testing.T, grant *supervise.SpawnBudget, check func(ctx context.Context, c *supervise.Coordinator, lead supervise.NodeID)) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead the team", Label: "lead", Budget: grant})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if check != nil {
			check(ctx, c, sp.WorkerID)
		}
		if err := awaitSettledOrIdle(ctx, c, sp.WorkerID); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "root done"}, nil
	})
}

// awaitSettledOrIdle awaits until worker id's settlement or an idle run
// (each await at most a minute).
func awaitSettledOrIdle(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID) error {
	for {
		ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
		if err != nil {
			return err
		}
		if ev.Idle || (ev.Event != nil && ev.Event.WorkerID == id) {
			return nil
		}
	}
}

// leadGrant is the budget a manager grants a lead it spawns: the lead's
// own turns and its children's reservations draw on it.
func leadGrant(tokens, iterations int64, usd float64) *supervise.SpawnBudget {
	return &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations, USD: &usd}
}

// goLead is a caller-owned nested manager brain.
type goLead func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error)

func (f goLead) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	return f(ctx, c, task)
}

// §3.6 maxDepth (rejection depth-exceeded): with MaxDepth 2 a lead (depth 1) admits
// writers (depth 2), and a lead under the lead (depth 2) is refused its
// own children with depth-exceeded; a refused spawn reserves nothing.
func TestNestedSpawnPastMaxDepthRefused(t *testing.T) {
	var mu sync.Mutex
	var refusals []string
	var depth2Admitted []supervise.NodeID
	leadBrain := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if !strings.HasPrefix(task, "sub") {
			// depth 1: a writer (depth 2), then a sub-lead (depth 2),
			// each awaited, so nothing else moves the pool while the
			// sub-lead is refused.
			for _, a := range []supervise.SpawnArgs{{Profile: "writer", Task: "write alpha"}, {Profile: "lead", Task: "sub lead"}} {
				sp, err := c.Spawn(ctx, a)
				if err != nil {
					return supervise.BrainReport{}, err
				}
				mu.Lock()
				depth2Admitted = append(depth2Admitted, sp.WorkerID)
				mu.Unlock()
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{Text: "lead DONE"}, nil
		}
		// depth 2: its child would be depth 3.
		before := c.Readout()
		_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"})
		var r *supervise.Refusal
		if errors.As(err, &r) {
			mu.Lock()
			refusals = append(refusals, string(r.Code))
			mu.Unlock()
		}
		if diff := cmp.Diff(before.Channels, c.Readout().Channels); diff != "" {
			t.Errorf("a refused spawn changed the pool:\n%s", diff)
		}
		return supervise.BrainReport{Text: "sub DONE"}, nil
	})
	o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, nil)
	// The lead's grant holds its writer's and its sub-lead's
	// reservations (1,000 tokens, 1 iteration, $0.10 each).
	o.Brain = rootBrainLeadGranted(t, leadGrant(2000, 2, 0.2), nil)
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return leadBrain }
	o.MaxDepth = 2
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"depth-exceeded"}, refusals); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]supervise.NodeID{"run1:s1:s2", "run1:s1:s3"}, depth2Admitted); diff != "" {
		t.Errorf("depth-2 ids (-want +got):\n%s", diff)
	}
	if len(res.Tree) != 3 || res.Status != supervise.StatusWinner {
		t.Errorf("tree %d nodes, status %s; want 3 and a winner", len(res.Tree), res.Status)
	}
}

// §3.6 Cancellation ("the owning manager applies the abort to exactly
// that subtree"), behaviour 49: cancelling the middle manager from the
// root cancels its live children (grandchildren of the root) and the
// manager, while a sibling writer of the root's is untouched; the
// root's await_event sees only its own children.
func TestNestedCancelMiddleManagerCascades(t *testing.T) {
	// The lead answers each spawn it made, admitted or refused, so the
	// root never waits on a child that was refused.
	type spawned struct {
		id  supervise.NodeID
		err error
	}
	grandLive := make(chan spawned, 4)
	leadBrain := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		for range 2 {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hang"})
			grandLive <- spawned{sp.WorkerID, err}
			if err != nil {
				return supervise.BrainReport{}, err
			}
		}
		<-ctx.Done() // the lead waits until it is cancelled
		return supervise.BrainReport{}, context.Cause(ctx)
	})
	started := make(chan struct{}, 4)
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if w.Task == "hang" {
			started <- struct{}{}
			<-ctx.Done()
			return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
		}
		return supervise.WorkResult{Text: "sibling DONE", Spent: zeroSpent()}, nil
	})
	var rootEvents, grands []supervise.NodeID
	var sibID supervise.NodeID
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sib, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "sibling"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		sibID = sib.WorkerID
		// The lead's grant holds its two writers' reservations (1,000
		// tokens, 1 iteration, $0.10 each).
		lead, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead the team", Budget: leadGrant(2000, 2, 0.2)})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		limit := time.NewTimer(waitLimit)
		defer limit.Stop()
		for range 2 {
			select {
			case sp := <-grandLive:
				if sp.err != nil {
					return supervise.BrainReport{}, fmt.Errorf("the lead's spawn: %w", sp.err)
				}
				grands = append(grands, sp.id)
			case <-limit.C:
				return supervise.BrainReport{}, errors.New("the lead spawned nothing in time")
			}
			select {
			case <-started:
			case <-limit.C:
				return supervise.BrainReport{}, errors.New("the lead's writer did not start in time")
			}
		}
		// Cancel the lead through the run dir, as agentrt cancel does.
		if _, err := supervise.CancelWorker(ctx, c.RunDir(), string(lead.WorkerID), "op-cancel-lead", supervise.CancelOptions{Reason: "test"}); err != nil {
			return supervise.BrainReport{}, err
		}
		for len(rootEvents) < 2 {
			ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
			if err != nil || ev.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, errors.New("root await ended without an event"))
			}
			rootEvents = append(rootEvents, ev.Event.WorkerID)
		}
		return supervise.BrainReport{Text: "root"}, nil
	})
	o := nestedOptions(t, exec, nil, nil)
	o.Brain = brain
	o.BudgetExempt = true
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return leadBrain }
	o.RunDir = t.TempDir()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rootEvents)
	if diff := cmp.Diff([]supervise.NodeID{"run1:s1", "run1:s2"}, rootEvents); diff != "" {
		t.Errorf("the root's events (-want +got):\n%s", diff)
	}
	slices.Sort(grands)
	if sibID != "run1:s1" || len(grands) != 2 || !strings.HasPrefix(string(grands[0]), "run1:s2:s") {
		t.Fatalf("sibling %s, grandchildren %v; want run1:s1 and two under run1:s2", sibID, grands)
	}
	states := map[supervise.NodeID]supervise.State{}
	for _, n := range res.Tree {
		states[n.ID] = n.State
	}
	want := map[supervise.NodeID]supervise.State{"run1:s2": supervise.StateCancelled, "run1:s1": supervise.StateDone,
		grands[0]: supervise.StateCancelled, grands[1]: supervise.StateCancelled}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	cancels, err := supervise.ReadWorkerCancellation(context.Background(), o.RunDir, "op-cancel-lead")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(cancels.Terminated)
	if diff := cmp.Diff([]supervise.NodeID{"run1:s2", grands[0], grands[1]}, cancels.Terminated); diff != "" {
		t.Errorf("terminated (-want +got):\n%s", diff)
	}
}

func zeroSpent() ledger.Spend {
	z := int64(0)
	return ledger.Spend{Tokens: &z, Iterations: &z, MicroUSD: &z}
}

// inboxLead is a caller-owned nested manager brain that reads its
// inbox (ManagerInbox): decisions of its own questions reach it there.
type inboxLead struct{ goLead }

func (inboxLead) ReadsInbox() bool { return true }

// untilInbox polls c's inbox, at most waitLimit, for one message.
func untilInbox(ctx context.Context, c *supervise.Coordinator) (string, error) {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if ms := c.ManagerInbox().Take(ctx); len(ms) > 0 {
			return ms[0].Message, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return "", errors.New("no message in the inbox")
}

// awaitQuestion waits for the next question event of c.
func awaitQuestion(ctx context.Context, c *supervise.Coordinator) (*supervise.Question, error) {
	ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventQuestion}, TimeoutMS: 60000})
	if err != nil {
		return nil, err
	}
	if ev.Event == nil || ev.Event.Question == nil {
		return nil, errors.New("await_event returned no question")
	}
	return ev.Event.Question, nil
}

// §3.6 Questions ("escalateQuestion … forwarded to nested managers",
// decisions answer|defer|escalate(parent|user)): a
// grandchild's question reaches its lead; the lead escalates it to its
// parent, the root, whose answer reaches the grandchild; the lead's own
// ask_parent is queued for the root (not no-parent) and the root's
// answer joins the lead's inbox. The run's EscalateQuestion is not
// called: a nested manager's parent is its parent manager; the hook is
// the top of the chain, the root's.
func TestNestedQuestionEscalatesFromGrandchildToRoot(t *testing.T) {
	var grandOut string
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which database?", Reason: "schema", Urgency: supervise.UrgencyBlocksStep})
		if err != nil {
			return supervise.WorkResult{}, err
		}
		grandOut = "used " + d.Answer + " DONE"
		return supervise.WorkResult{Text: grandOut, Spent: zeroSpent()}, nil
	})
	var leadGot, escStatus, askStatus string
	var leadQuestions []supervise.Question
	lead := inboxLead{goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "ask"}); err != nil {
			return supervise.BrainReport{}, err
		}
		q, err := awaitQuestion(ctx, c)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, EscalateTo: "parent", EscalateReason: "the root owns the schema"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		escStatus = ans.Status
		ask, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Question: "may I ship?", Reason: "done", Urgency: supervise.UrgencyContinueWithout})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		askStatus = ask.Status
		if leadGot, err = untilInbox(ctx, c); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000}); err != nil {
			return supervise.BrainReport{}, err
		}
		leadQuestions = c.ListQuestions().Questions
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})}
	var rootQuestions []supervise.Question
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, answer := range []string{"postgres", "yes"} {
			q, err := awaitQuestion(ctx, c)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: answer}); err != nil || !res.Delivered {
				return supervise.BrainReport{}, errors.Join(err, errors.New("the root's answer was not delivered"))
			}
		}
		for {
			ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event != nil && ev.Event.WorkerID == sp.WorkerID {
				break
			}
		}
		rootQuestions = c.ListQuestions().Questions
		return supervise.BrainReport{Text: "root"}, nil
	})
	o := nestedOptions(t, exec, nil, nil)
	o.Brain, o.BudgetExempt = root, true
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return lead }
	var hookCalls atomic.Int64
	o.EscalateQuestion = func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
		hookCalls.Add(1)
		return supervise.EscalationOutcome{Delivered: true, To: "the operator"}, nil
	}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := hookCalls.Load(); n != 0 {
		t.Errorf("EscalateQuestion was called %d times; a nested manager's questions go to its parent manager", n)
	}
	if escStatus != "queued-for-parent" || askStatus != "queued-for-parent" {
		t.Errorf("escalation %q, ask_parent %q; want queued-for-parent for both", escStatus, askStatus)
	}
	if !strings.Contains(leadGot, "yes") {
		t.Errorf("the lead's inbox got %q, want the root's answer", leadGot)
	}
	type qrow struct {
		From   supervise.NodeID
		Status string
	}
	rows := func(qs []supervise.Question) []qrow {
		var out []qrow
		for _, q := range qs {
			out = append(out, qrow{q.From, q.Status})
		}
		return out
	}
	if diff := cmp.Diff([]qrow{{"run1:s1:s2", "answered"}, {"run1:s1", "answered"}}, rows(rootQuestions)); diff != "" {
		t.Errorf("the root's questions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]qrow{{"run1:s1:s2", "escalated"}}, rows(leadQuestions)); diff != "" {
		t.Errorf("the lead's questions (-want +got):\n%s", diff)
	}
	var grand *supervise.WorkerSummary
	for i := range res.Tree {
		if res.Tree[i].ID == "run1:s1:s2" {
			grand = &res.Tree[i]
		}
	}
	if grand == nil || !grand.Delivered || grand.State != supervise.StateDone {
		t.Fatalf("grandchild %+v, want done and delivered", grand)
	}
	if !strings.Contains(grandOut, "postgres") {
		t.Errorf("grandchild output %q, want the root's answer", grandOut)
	}
}

// §3.6 "Persistence & resume", behaviours 40, 46 at depth: the run is
// cut right after the lead's first child settled (the process died
// there). Resumed on the same dir, the lead — live in the journal, its
// spawn marked runtime manager — is driven again under its id: its
// settled child is replayed, not executed again (executor counts), its
// unsettled work runs, the root's repeated spawn of the lead re-attaches
// to it, and the winner and the workers' spend equal the uninterrupted
// run's. The lead's turns of the dead process stay charged (journaled
// metered records under its node).
func TestNestedResumeAfterCrashMidTree(t *testing.T) {
	leadModel := func() contract.ChatModel { return sequentialLead() }
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)

	refExec := newCounting(t, workerProvider(t))
	o := nestedOptions(t, refExec, rootSpawningLead(), leadModel)
	o.RunDir = t.TempDir()
	want, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("reference run: %v %+v", err, want)
	}

	dir := t.TempDir()
	o = nestedOptions(t, newCounting(t, workerProvider(t)), rootSpawningLead(), leadModel)
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), mgr, "ship", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1) // run1:s1:s2 (alpha) settled; beta and the lead not
	leadTurns := meteredUnder(t, dir, "run1:s1")
	if leadTurns == 0 {
		t.Fatal("the cut journal holds no metered turn of the lead")
	}

	second := newCounting(t, workerProvider(t))
	o = nestedOptions(t, second, rootSpawningLead(), leadModel)
	o.RunDir, o.Resume = dir, true
	got, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if second.count("alpha") != 0 || second.count("beta") != 1 {
		t.Errorf("resumed process executed alpha %d, beta %d times; want 0 and 1", second.count("alpha"), second.count("beta"))
	}
	if got.Status != supervise.StatusWinner || got.Winner.Node != want.Winner.Node || got.Winner.OutRef != want.Winner.OutRef {
		t.Fatalf("resumed winner %+v, want %+v", got.Winner, want.Winner)
	}
	ids := func(r supervise.SupervisedResult) []supervise.NodeID {
		var out []supervise.NodeID
		for _, n := range r.Tree {
			out = append(out, n.ID)
		}
		return out
	}
	if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
		t.Errorf("tree ids (-uninterrupted +resumed):\n%s", diff)
	}
	if !got.Tree[1].Replayed || got.Tree[2].Replayed {
		t.Errorf("replayed alpha %v beta %v; want true, false", got.Tree[1].Replayed, got.Tree[2].Replayed)
	}
	// Workers' spend is the same; the lead's journaled turns of the dead
	// process are charged on top of its five re-driven ones.
	wantWork := want.Breakdown.ChildWork.Tokens + int64(leadTurns)*10
	if got.Breakdown.ChildWork.Tokens != wantWork || !got.Spent.TokensKnown {
		t.Errorf("child work %+v, want %d tokens known", got.Breakdown.ChildWork, wantWork)
	}
	if len(got.SpendGaps) != 0 {
		t.Errorf("spend gaps %+v, want none", got.SpendGaps)
	}
}

// meteredUnder counts the records of node in dir's journal that charge
// one of its model turns (chargesTurn).
func meteredUnder(t *testing.T, dir string, node supervise.NodeID) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r supervise.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		if chargesTurn(r, node) {
			n++
		}
	}
	return n
}

// steerableExec is an executor whose workers take steers through its
// own inbox (Steerer): a worker of task "wait" settles with the first
// message it is given.
type steerableExec struct {
	mu    sync.Mutex
	inbox map[supervise.NodeID]chan string
}

func (e *steerableExec) box(id supervise.NodeID) chan string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inbox == nil {
		e.inbox = map[supervise.NodeID]chan string{}
	}
	if e.inbox[id] == nil {
		e.inbox[id] = make(chan string, 1)
	}
	return e.inbox[id]
}

func (e *steerableExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if w.Task != "wait" {
		return supervise.WorkResult{Text: w.Task + " DONE", Spent: zeroSpent()}, nil
	}
	select {
	case msg := <-e.box(w.Node):
		return supervise.WorkResult{Text: "steered: " + msg + " DONE", Spent: zeroSpent()}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
	}
}

func (e *steerableExec) Deliver(_ context.Context, node supervise.NodeID, msg string) bool {
	select {
	case e.box(node) <- msg:
		return true
	default:
		return false
	}
}

// §3.6 "ids route at any depth", §9 observe_agent/steer_agent: the root
// observes and steers its grandchild by its exact id; a nested manager
// reaches only its own subtree (the root's other child is an unknown
// worker to it).
func TestNestedIDsRouteAtAnyDepth(t *testing.T) {
	var leadSawSibling, leadSawOwn error
	var leadOut string
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "wait"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		_, leadSawSibling = c.Observe("run1:s1")
		_, leadSawOwn = c.Observe(sp.WorkerID)
		ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, errors.Join(err, errors.New("the lead's await returned no event"))
		}
		leadOut = "lead DONE: " + ev.Event.Output
		return supervise.BrainReport{Text: leadOut}, nil
	})
	var steer supervise.SteerResult
	var grandState supervise.State
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "sibling"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"}); err != nil {
			return supervise.BrainReport{}, err
		}
		const grand = supervise.NodeID("run1:s2:s3")
		deadline := time.Now().Add(waitLimit)
		for {
			ob, err := c.Observe(grand)
			if err == nil && ob.Status == supervise.StateRunning {
				grandState = ob.Status
				break
			}
			if time.Now().After(deadline) {
				return supervise.BrainReport{}, errors.New("the grandchild never ran")
			}
			time.Sleep(2 * time.Millisecond)
		}
		var err error
		if steer, err = c.Steer(ctx, supervise.SteerArgs{WorkerID: grand, Instruction: "use the cache"}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 {
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{Text: "root"}, nil
	})
	o := nestedOptions(t, &steerableExec{}, nil, nil)
	o.Brain, o.BudgetExempt = root, true
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return lead }
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if grandState != supervise.StateRunning || !steer.Delivered || steer.Outcome != string(supervise.SteerDelivered) {
		t.Errorf("observed grandchild %s, steer %+v; want running and delivered", grandState, steer)
	}
	if !errors.Is(leadSawSibling, supervise.ErrUnknownWorker) || leadSawOwn != nil {
		t.Errorf("the lead observing the root's other child: %v, its own: %v; want unknown worker and nil", leadSawSibling, leadSawOwn)
	}
	if res.Status != supervise.StatusWinner || len(res.Tree) != 3 {
		t.Fatalf("status %s, %d nodes; want a winner of 3", res.Status, len(res.Tree))
	}
	if lead := res.Tree[1]; lead.ID != "run1:s2" || !lead.Delivered {
		t.Errorf("lead %+v, want run1:s2 delivered", lead.NodeInfo)
	}
	if !strings.Contains(leadOut, "steered: use the cache") {
		t.Errorf("the lead's result %q, want its child's steered output", leadOut)
	}
}

// steeringRoot is the router brain of the root, which reads its inbox,
// with an in-process steer_agent call addressed to the run id sent as
// it starts.
type steeringRoot struct {
	rb  *supervise.RouterBrain
	got chan supervise.SteerResult
}

func (s steeringRoot) ReadsInbox() bool { return true }

func (s steeringRoot) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	go func() {
		r, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: "run1", Instruction: rootSteerText})
		if err != nil {
			r.Reason = err.Error()
		}
		s.got <- r
	}()
	return s.rb.Drive(ctx, c, task)
}

// §3.6 "Root steer: pass runId as worker", behaviour 48, in process:
// steer_agent addressed to the run id reaches the router manager's next
// model call, as the cross-process `agentrt steer RUN RUNID MSG` does,
// instead of answering unknown-worker.
func TestInProcessRootSteerReachesRouterManager(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{call("c1", supervise.VerbReadJournal, map[string]any{}), managerUsage(10, 5, 0.0001)},
			Expect: func([]contract.ChatMessage, []contract.Tool) error {
				return untilPosted(ctx, dir, supervise.SteerSourceCoordination+"-1")
			}},
		{Events: []contract.ChatEvent{scripted.Text("noted"), managerUsage(20, 5, 0.0002)},
			Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, rootSteerText) }},
	}})
	mgr := managerProfile(t, supervise.VerbReadJournal)
	rb, err := supervise.NewRouterBrain(mgr, router, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := steeringRoot{rb: rb, got: make(chan supervise.SteerResult, 1)}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir, o.Brain = dir, b
	res, err := supervise.Supervise(ctx, mgr, "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.BrainText != "noted" || router.Calls() != 2 {
		t.Errorf("the manager said %q in %d calls (error %+v), want noted in 2", res.BrainText, router.Calls(), res.Error)
	}
	got := <-b.got
	if !got.Delivered || got.Outcome != string(supervise.SteerDelivered) {
		t.Errorf("in-process root steer %+v, want delivered", got)
	}
	acks := steerRecords[supervise.SteerAck](t, dir, supervise.KindSteerAcknowledged)
	if len(acks) != 1 || acks[0].Effect != supervise.SteerDelivered || acks[0].Worker != "run1" {
		t.Errorf("journaled acknowledgements %+v, want one delivered to run1", acks)
	}
}

// §3.6 "one conserved budget", behaviour 39 at depth: a nested router
// manager is held to its node's reservation — here 20 tokens, two of
// its 10-token turns — so its brain makes no model call once its
// metered turns reached it; it settles failed with the reason named,
// its spend within one turn of its ceiling, and its delivered child is
// no candidate of the root's (the root's finalizer picks among its own
// children): no winner. Its reservation's one iteration does not stop
// it: a manager's turn counts no iteration.
func TestNestedManagerHeldToItsReservation(t *testing.T) {
	lead := sequentialLead()
	root := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team",
			"budget": map[string]any{"maxTokens": 20, "maxIterations": 1}}), managerUsage(10, 0, 0.0001)),
		turn(call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0.0001)),
		turn(scripted.Text("root: nothing delivered"), managerUsage(10, 0, 0.0001)),
	}})
	exec := newCounting(t, workerProvider(t))
	o := nestedOptions(t, exec, root, func() contract.ChatModel { return lead })
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if lead.Calls() != 2 {
		t.Errorf("the lead made %d model calls, want 2 (its reservation's 20 tokens)", lead.Calls())
	}
	l := res.Tree[0]
	if l.ID != "run1:s1" || l.State != supervise.StateFailed || l.Settlement == nil || !strings.Contains(l.Settlement.Reason, "budget") {
		t.Fatalf("lead %+v, want failed for its budget: %q", l.NodeInfo, l.Settlement.Reason)
	}
	if sp := l.Settlement.Spent; sp.Iterations == nil || *sp.Iterations != 0 || sp.Tokens == nil || *sp.Tokens != 20 {
		t.Errorf("lead spent %+v, want 0 iterations and 20 tokens", sp)
	}
	if res.Status != supervise.StatusNoWinner || res.Winner != nil {
		t.Errorf("status %s winner %+v; want no winner (the delivered grandchild is the lead's candidate)", res.Status, res.Winner)
	}
}

// §9 submit_result and stop for a nested manager: its first passing
// submission is its result (not the run's: it is journaled under the
// lead's node, never as the run's submission), a second is refused earlier-passing-result, stop
// ends its brain without failing it, and a steer to it — whose brain
// reads no inbox — is unsupported, not delivered.
func TestNestedManagerSubmitStopAndSteer(t *testing.T) {
	var second error
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if r, err := c.Submit(ctx, supervise.SubmitArgs{Result: "lead result DONE"}); err != nil || !r.Accepted {
			return supervise.BrainReport{}, errors.Join(err, errors.New("first submission refused"))
		}
		_, second = c.Submit(ctx, supervise.SubmitArgs{Result: "again DONE"})
		if _, err := c.Stop(supervise.StopArgs{Reason: "done"}); err != nil {
			return supervise.BrainReport{}, err
		}
		<-ctx.Done() // stop ends the brain's context
		return supervise.BrainReport{Text: "ignored"}, context.Cause(ctx)
	})
	var steer supervise.SteerResult
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if steer, err = c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: "hurry"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
		return supervise.BrainReport{Text: "root"}, err
	})
	o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, nil)
	o.Brain = root
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return lead }
	o.RunDir = t.TempDir()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	var v *supervise.VerbRefusal
	if !errors.As(second, &v) || v.Code != "earlier-passing-result" {
		t.Errorf("second submission: %v, want earlier-passing-result", second)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" || res.Winner.Text != "lead result DONE" || res.Winner.Submitted {
		t.Fatalf("winner %+v, want the lead's submitted result as its output", res.Winner)
	}
	if steer.Delivered || steer.Outcome != string(supervise.SteerUnsupported) {
		t.Errorf("steer to a lead without an inbox: %+v, want unsupported", steer)
	}
	if subs := submittedRecords(t, o.RunDir); len(subs) != 1 || subs[0].Node != "run1:s1" {
		t.Errorf("journaled submissions %+v, want the lead's one under run1:s1, none as the run's", subs)
	}
}

// Behaviour 46 at depth 3: root → lead → sub-lead → writers, cut after
// the sub-lead's first child settled. The resumed run drives both
// managers again (the lead first: the sub-lead's children run under the
// sub-lead's context, made before any of them starts), the lead's
// repeated spawn re-attaches to the live sub-lead, the settled writer is
// replayed and only the unsettled one runs.
func TestNestedChainResumesAtDepthThree(t *testing.T) {
	brain := func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		tasks := []string{"sub"}
		profileName := "lead"
		if task == "sub" {
			tasks, profileName = []string{"write alpha", "write beta"}, "writer"
		}
		for _, tk := range tasks {
			a := supervise.SpawnArgs{Profile: profileName, Task: tk}
			if profileName == "lead" {
				// The sub-lead's grant holds its two writers (1,000
				// tokens, 1 iteration, $0.10 each); the lead's holds it.
				a.Budget = leadGrant(2000, 2, 0.2)
			}
			if _, err := c.Spawn(ctx, a); err != nil {
				return supervise.BrainReport{}, err
			}
			if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, errors.New("no settlement"))
			}
		}
		return supervise.BrainReport{Text: task + " DONE"}, nil
	}
	opts := func(exec supervise.Executor, dir string, resume bool) supervise.Options {
		o := nestedOptions(t, exec, nil, nil)
		o.Brain = rootBrainLeadGranted(t, leadGrant(2000, 2, 0.2), nil)
		o.ManagerBrain = func(*profile.Profile) supervise.Brain { return goLead(brain) }
		o.RunDir, o.Resume = dir, resume
		return o
	}
	mgr := managerProfile(t, supervise.VerbSpawnWorker)
	dir := t.TempDir()
	first := newCounting(t, workerProvider(t))
	want, err := supervise.Supervise(context.Background(), mgr, "ship", opts(first, dir, false))
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("first run: %v %+v", err, want)
	}
	ids := func(r supervise.SupervisedResult) []supervise.NodeID {
		var out []supervise.NodeID
		for _, n := range r.Tree {
			out = append(out, n.ID)
		}
		return out
	}
	if diff := cmp.Diff([]supervise.NodeID{"run1:s1", "run1:s1:s2", "run1:s1:s2:s3", "run1:s1:s2:s4"}, ids(want)); diff != "" {
		t.Fatalf("tree (-want +got):\n%s", diff)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1) // alpha settled; beta, the sub-lead and the lead not

	second := newCounting(t, workerProvider(t))
	got, err := supervise.Supervise(context.Background(), mgr, "ship", opts(second, dir, true))
	if err != nil {
		t.Fatal(err)
	}
	if second.count("alpha") != 0 || second.count("beta") != 1 {
		t.Errorf("resumed executions alpha %d beta %d; want 0 and 1", second.count("alpha"), second.count("beta"))
	}
	if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
		t.Errorf("resumed tree (-first +resumed):\n%s", diff)
	}
	if got.Status != supervise.StatusWinner || got.Winner.Node != "run1:s1" || got.Winner.OutRef != want.Winner.OutRef {
		t.Errorf("resumed winner %+v, want %+v", got.Winner, want.Winner)
	}
}

// Issue 13's property test with nesting (behaviours 36, 40, 46): random
// trees — the root spawns one to three leads, each a nested manager
// running a random plan of writers — are cut at a random point of their
// journal and resumed up to three times. After every step of every
// manager, in every process, free + reserved + committed equals the
// root total on tokens, usd and iterations; every node sits at the
// depth its id says, and every run ends with a result.
func TestNestedConservationAcrossCrashAndResume(t *testing.T) {
	const seeds = 25
	tasks := []string{"write alpha", "write beta", "write alpha again", "write beta again"}
	resumes := 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x7e57))
		plans := map[string][]string{}
		var leads []string
		for i := range 1 + rng.IntN(3) {
			lead := fmt.Sprintf("lead %d", i)
			leads = append(leads, lead)
			plan := make([]string, 1+rng.IntN(3))
			for j := range plan {
				plan[j] = tasks[rng.IntN(len(tasks))]
			}
			plans[lead] = plan
		}
		dir := t.TempDir()
		run := func(phase string, resume bool) supervise.SupervisedResult {
			where := func(who string, step int) string {
				return fmt.Sprintf("seed %d, %s, %s step %d", seed, phase, who, step)
			}
			o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, nil)
			o.Budget.Iterations = i64(200)
			o.RunDir, o.Resume = dir, resume
			o.ManagerBrain = func(*profile.Profile) supervise.Brain {
				return goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
					rep, err := planBrain(t, plans[task], func(step int) string { return where(task, step) }).Drive(ctx, c, task)
					rep.Text = task + " DONE"
					return rep, err
				})
			}
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for i, lead := range leads {
					if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: lead}); err != nil {
						return supervise.BrainReport{}, err
					}
					checkPoolConserved(t, c.Readout(), where("root", i))
				}
				for i := range leads {
					if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
						return supervise.BrainReport{}, err
					}
					checkPoolConserved(t, c.Readout(), where("root", len(leads)+i))
				}
				return supervise.BrainReport{}, nil
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatalf("%s: %v", where("run", -1), err)
			}
			if res.Status == "" {
				t.Fatalf("%s: no result", where("run", -1))
			}
			for _, n := range res.Tree {
				if want := strings.Count(string(n.ID), ":"); n.Depth != want {
					t.Fatalf("%s: node %s at depth %d, want %d", where("run", -1), n.ID, n.Depth, want)
				}
			}
			return res
		}
		run("first run", false)
		for crash := range 1 + rng.IntN(3) {
			cutJournal(t, dir, rng)
			if res := run(fmt.Sprintf("resume %d", crash+1), true); !res.Resumed {
				t.Fatalf("seed %d: the run was not resumed", seed)
			}
			resumes++
		}
	}
	t.Logf("%d seeds, %d crash-and-resume cycles", seeds, resumes)
}

// §3.6 Questions across a resume: a question a grandchild asked its lead
// in a process that died is listed again — to the lead, not the root,
// with the decision the coordination log holds for it — when the
// resumed run drives the lead again; the root's list does not hold it.
func TestNestedQuestionListedToItsManagerAfterResume(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which database?", Reason: "schema", Urgency: supervise.UrgencyBlocksStep})
		if err != nil {
			return supervise.WorkResult{Spent: zeroSpent()}, err
		}
		return supervise.WorkResult{Text: d.Answer + " DONE", Spent: zeroSpent()}, nil
	})
	var listed [][]supervise.Question
	var rootListed []supervise.Question
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		listed = append(listed, c.ListQuestions().Questions)
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "ask"}); err != nil {
			return supervise.BrainReport{}, err
		}
		q, err := awaitQuestion(ctx, c)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: "postgres"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err = c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000})
		return supervise.BrainReport{Text: "lead DONE"}, err
	})
	dir := t.TempDir()
	// The lead's grant holds its writer twice (1,000 tokens and 1
	// iteration each): the writer the cut left in doubt is charged in
	// full there, and the resumed lead's writer reserves its own.
	tokens, iterations := int64(2000), int64(2)
	grant := &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}
	run := func(resume bool) supervise.SupervisedResult {
		o := nestedOptions(t, exec, nil, nil)
		o.Brain = rootBrainLeadGranted(t, grant, nil)
		if resume {
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
				rootListed = c.ListQuestions().Questions
				return rootBrainLeadGranted(t, grant, nil).Drive(ctx, c, task)
			})
		}
		o = uncappedUSD(o) // the writer left in doubt is charged at its ceiling: no dollar ceiling to taint
		o.BudgetExempt = true
		o.ManagerBrain = func(*profile.Profile) supervise.Brain { return lead }
		o.RunDir, o.Resume = dir, resume
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run(false)
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2) // the lead and its writer spawned; nothing settled
	res := run(true)
	if res.Status != supervise.StatusWinner {
		t.Fatalf("resumed run %s %s %+v, tree %+v, want a winner", res.Status, res.Reason, res.Error, res.Tree)
	}
	if len(listed) != 2 {
		t.Fatalf("the lead was driven %d times, want 2", len(listed))
	}
	type qrow struct {
		From   supervise.NodeID
		To     supervise.NodeID
		Status string
	}
	var got []qrow
	for _, q := range listed[1] {
		got = append(got, qrow{q.From, q.To, q.Status})
	}
	if diff := cmp.Diff([]qrow{{"run1:s1:s2", "run1:s1", "answered"}}, got); diff != "" {
		t.Errorf("the resumed lead's questions (-want +got):\n%s", diff)
	}
	if len(rootListed) != 0 {
		t.Errorf("the root lists %+v, want none of the lead's", rootListed)
	}
}

// untilInboxPosted waits, at most waitLimit, until node's inbox
// projection in dir holds a posted steer.
func untilInboxPosted(ctx context.Context, dir string, node supervise.NodeID) error {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		recs, _, err := supervise.ReadInbox(ctx, dir, node)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, r := range recs {
			if r.Kind == supervise.InboxPosted {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("no steer was posted to %s", node)
}

// §3.6 Steering at depth, behaviour 48: the root steers its nested
// router manager by id; the steer waits in the lead's inbox and joins
// its next model call (delivered = its next turn took it), as a root
// steer joins the root's.
func TestNestedRouterManagerTakesSteerBetweenTurns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const steerText = "LEAD-STEER: cover the error paths"
	lead := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{call("l1", supervise.VerbReadJournal, map[string]any{}), managerUsage(5, 1, 0)},
			Expect: func([]contract.ChatMessage, []contract.Tool) error { return untilInboxPosted(ctx, dir, "run1:s1") }},
		{Events: []contract.ChatEvent{scripted.Text("lead: noted, DONE"), managerUsage(5, 1, 0)},
			Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, steerText) }},
	}})
	var steer supervise.SteerResult
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Budget: &supervise.SpawnBudget{Iterations: i64(5)}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if steer, err = c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: steerText}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
		return supervise.BrainReport{Text: "root"}, err
	})
	o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, func() contract.ChatModel { return lead })
	o.Profiles["lead"] = leadProfile(t, append(slices.Clone(leadVerbs), supervise.VerbReadJournal)...)
	o.Brain, o.RunDir = root, dir
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if !steer.Delivered || steer.Outcome != string(supervise.SteerDelivered) {
		t.Errorf("steer to the lead %+v, want delivered", steer)
	}
	if lead.Calls() != 2 || res.Status != supervise.StatusWinner || res.Winner.Text != "lead: noted, DONE" {
		t.Errorf("lead calls %d, status %s, winner %+v; want 2 calls and the lead's answer delivered", lead.Calls(), res.Status, res.Winner)
	}
}

// A worker profile that declares coordination verbs but that no brain
// can drive — an external harness without Options.ManagerBrain, or a
// cli-base one without Options.Router — is refused at spawn
// (preflight-refused, cause manager-brain), reserving nothing, rather
// than run as a leaf that ignores its verbs.
func TestNestedManagerWithoutBrainRefused(t *testing.T) {
	external := mustProfile(t, `{"name": "lead", "harness": "claude-code", "tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	tests := []struct {
		name string
		lead *profile.Profile
	}{
		{"external harness, no ManagerBrain", external},
		{"cli-base, no Router", leadProfile(t, leadVerbs...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var refusal *supervise.Refusal
			var before, after ledger.Readout
			root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				before = c.Readout()
				_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
				errors.As(err, &refusal)
				after = c.Readout()
				return supervise.BrainReport{}, nil
			})
			o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, nil)
			o.Profiles["lead"], o.Brain, o.ManagerBrain = tc.lead, root, nil
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o); err != nil {
				t.Fatal(err)
			}
			if refusal == nil || refusal.Code != supervise.CodePreflightRefused || refusal.Cause != "manager-brain" {
				t.Fatalf("refusal %+v, want preflight-refused manager-brain", refusal)
			}
			if diff := cmp.Diff(before.Channels, after.Channels); diff != "" {
				t.Errorf("the refused spawn moved the pool:\n%s", diff)
			}
		})
	}
}

package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// Spawn keys belong to the manager that spawns (§3.6 "Keyed spawns",
// behaviour 44 under nested managers). The reference mounts every
// nested manager's scope with createScope, whose key registry is a map
// made per scope (scope.ts createScope: "const keyed = new Map"), and a
// restored nested scope is rebuilt from its own journal tree
// (makeNestedScopeSeam's restore: prepareScopeResume over the nested
// root, keyedAssignments of that tree's spawned events). So the same
// key under two managers is two assignments; under one manager the
// usual rules hold. The unkeyed assignment ordinal is the manager's
// too (coordination.ts: "assignment identity belongs to this manager").

// spawnOK admits req or fails the test, returning the reply.
func spawnOK(t *testing.T, s *supervise.Scope, req supervise.SpawnRequest) supervise.SpawnReply {
	t.Helper()
	r, err := s.Spawn(req)
	if err != nil {
		t.Fatalf("spawn %+v: %v", req, err)
	}
	return r
}

// refusedAs checks that req is refused with code and reserves nothing.
func refusedAs(t *testing.T, s *supervise.Scope, pool *ledger.Pool, req supervise.SpawnRequest, code supervise.Code, where string) {
	t.Helper()
	before := pool.Readout()
	_, err := s.Spawn(req)
	var r *supervise.Refusal
	if !errors.As(err, &r) || r.Code != code {
		t.Fatalf("%s: %v, want refused %s", where, err, code)
	}
	if after := pool.Readout(); after.Channels[ledger.ChannelTokens] != before.Channels[ledger.ChannelTokens] {
		t.Errorf("%s: the refusal moved the run's pool: %+v then %+v", where, before.Channels[ledger.ChannelTokens], after.Channels[ledger.ChannelTokens])
	}
}

// Behaviour 44 per manager, at the Scope: the key "k" under the root,
// under lead A and under lead B is three assignments, each admitted and
// each settled on its own; within one manager a live key refuses
// duplicate-key, a changed request key-conflict, a completed key
// replays its node, a down key retries (naming its prior worker), an
// in-doubt key refuses in-doubt — and none of it reaches another
// manager. Unkeyed assignments are numbered per manager.
func TestNestedKeyScopedToItsManagerBehaviour44(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	writer := ledger.Budget{Tokens: i64(500), Iterations: i64(1)}
	// The leads grant no dollars: lead B's in-doubt writer below, which
	// declared none, would taint a dollar-capped pool of B's (§6) and
	// refuse B's unkeyed spawns for a reason this test is not about.
	grant := ledger.Budget{Tokens: i64(5000), Iterations: i64(10)}
	a := spawnOK(t, s, supervise.SpawnRequest{Profile: "lead", Label: "a", Budget: grant})
	b := spawnOK(t, s, supervise.SpawnRequest{Profile: "lead", Label: "b", Budget: grant})
	if a.Assignment != "ordinal:0" || b.Assignment != "ordinal:1" {
		t.Errorf("the root's unkeyed leads got %s and %s, want ordinal:0 and ordinal:1 (the reference counts from 0)", a.Assignment, b.Assignment)
	}
	req := func(parent supervise.NodeID, task string) supervise.SpawnRequest {
		return supervise.SpawnRequest{Parent: parent, Profile: "writer", Task: task, Key: "k", Budget: writer}
	}
	root := spawnOK(t, s, req("", "root work"))
	ka := spawnOK(t, s, req(a.Node, "alpha"))
	kb := spawnOK(t, s, req(b.Node, "beta"))
	for _, r := range []supervise.SpawnReply{root, ka, kb} {
		if r.Assignment != "key:k" || r.Resumed != supervise.ResumedNone {
			t.Errorf("%s: assignment %q resumed %q, want a new key:k", r.Node, r.Assignment, r.Resumed)
		}
	}
	if p, _ := ka.Node.Parent(); p != a.Node {
		t.Errorf("lead A's key:k is %s, want a child of %s", ka.Node, a.Node)
	}
	if p, _ := kb.Node.Parent(); p != b.Node {
		t.Errorf("lead B's key:k is %s, want a child of %s", kb.Node, b.Node)
	}
	checkAllConserved(t, s, pool, "three key:k admitted")

	// Within lead A: live, then changed.
	refusedAs(t, s, pool, req(a.Node, "alpha"), supervise.CodeDuplicateKey, "lead A's live key again")
	refusedAs(t, s, pool, req(a.Node, "other"), supervise.CodeKeyConflict, "lead A's key with another task")

	// A's settles done: A replays it, B's and the root's are still live.
	if _, err := s.Settle(ka.Node, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(40), Iterations: i64(1), MicroUSD: i64(0)}}); err != nil {
		t.Fatal(err)
	}
	again := spawnOK(t, s, req(a.Node, "alpha"))
	if again.Resumed != supervise.ResumedCompleted || again.Node != ka.Node || again.Settlement == nil || again.Settlement.State != supervise.StateDone {
		t.Errorf("lead A's completed key: %+v, want resumed completed as %s", again, ka.Node)
	}
	refusedAs(t, s, pool, req(b.Node, "beta"), supervise.CodeDuplicateKey, "lead B's live key after A's completed")
	refusedAs(t, s, pool, req("", "root work"), supervise.CodeDuplicateKey, "the root's live key after A's completed")

	// B's goes down: B retries it under B, naming its prior worker; A
	// still replays its own.
	if _, err := s.Settle(kb.Node, supervise.Result{State: supervise.StateFailed, Spent: ledger.Spend{Tokens: i64(30), Iterations: i64(1), MicroUSD: i64(0)}, Reason: "tool crashed"}); err != nil {
		t.Fatal(err)
	}
	retry := spawnOK(t, s, req(b.Node, "beta"))
	if retry.Resumed != supervise.ResumedRetried || retry.PriorWorker != kb.Node || retry.PriorReason != "tool crashed" || retry.Assignment != "key:k" {
		t.Errorf("lead B's down key: %+v, want resumed retried from %s (tool crashed)", retry, kb.Node)
	}
	if p, _ := retry.Node.Parent(); p != b.Node {
		t.Errorf("lead B's retry is %s, want a child of %s", retry.Node, b.Node)
	}
	if r := spawnOK(t, s, req(a.Node, "alpha")); r.Resumed != supervise.ResumedCompleted || r.Node != ka.Node {
		t.Errorf("lead A's key after B's retry: %+v, want still completed as %s", r, ka.Node)
	}

	// B's retry goes in doubt: B refuses in-doubt, whatever its request;
	// A and the root are not touched.
	if err := s.MarkInDoubt(retry.Node); err != nil {
		t.Fatal(err)
	}
	refusedAs(t, s, pool, req(b.Node, "beta"), supervise.CodeInDoubt, "lead B's in-doubt key")
	refusedAs(t, s, pool, req(b.Node, "other"), supervise.CodeInDoubt, "lead B's in-doubt key, another task")
	if r := spawnOK(t, s, req(a.Node, "alpha")); r.Resumed != supervise.ResumedCompleted {
		t.Errorf("lead A's key beside B's in-doubt one: %+v, want completed", r)
	}
	refusedAs(t, s, pool, req("", "root work"), supervise.CodeDuplicateKey, "the root's live key beside B's in-doubt one")

	// Unkeyed assignments are numbered per manager.
	for _, tc := range []struct {
		parent supervise.NodeID
		want   string
	}{{a.Node, "ordinal:0"}, {a.Node, "ordinal:1"}, {b.Node, "ordinal:0"}, {"", "ordinal:2"}} {
		r := spawnOK(t, s, supervise.SpawnRequest{Parent: tc.parent, Profile: "writer", Task: "unkeyed", Budget: writer})
		if r.Assignment != tc.want {
			t.Errorf("an unkeyed spawn under %q: %s, want %s", tc.parent, r.Assignment, tc.want)
		}
	}
	checkAllConserved(t, s, pool, "end")
}

// taskGate is an Executor whose worker on task T runs until T's gate is
// opened (then reports 10 tokens, 1 iteration, 10 micro-dollars and
// "<task> DONE"), or its context ends. It is no Recoverer: a worker a
// killed process left running is in doubt on resume.
type taskGate struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (g *taskGate) gate(task string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates == nil {
		g.gates = map[string]chan struct{}{}
	}
	c := g.gates[task]
	if c == nil {
		c = make(chan struct{})
		g.gates[task] = c
	}
	return c
}

func (g *taskGate) open(task string) {
	c := g.gate(task)
	select {
	case <-c:
	default:
		close(c)
	}
}

func (g *taskGate) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	spent := ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}
	select {
	case <-g.gate(w.Task):
		return supervise.WorkResult{Text: w.Task + " DONE", Spent: spent}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
}

// leadKeyOutcome is what one lead saw of its key "k".
type leadKeyOutcome struct {
	lead                 supervise.NodeID
	first                supervise.SpawnResult
	firstErr             error
	dup, again, conflict error // nil when the step did not run or was admitted
	againRes             supervise.SpawnResult
	output               string // the settled writer's output, when awaited
}

// twoLeadKeys collects each lead's outcome, by its task.
type twoLeadKeys struct {
	mu  sync.Mutex
	out map[string]*leadKeyOutcome
}

func (k *twoLeadKeys) put(task string, o *leadKeyOutcome) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.out[task] = o
}

func (k *twoLeadKeys) get(task string) *leadKeyOutcome {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out[task]
}

// keyLeadBrain is each lead's brain: it spawns a writer under the key
// "k" on a task of its own ("write alpha for <lead task>"); when that
// admits a worker it spawns the same again (duplicate-key, the worker
// gated), opens the worker's gate, awaits its settlement, spawns the
// same again (resumed: completed) and then the key on another task
// (key-conflict). A completed or refused first spawn ends the lead.
func keyLeadBrain(gate *taskGate, got *twoLeadKeys) func(*profile.Profile) supervise.Brain {
	return func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			o := &leadKeyOutcome{lead: c.Self()}
			defer got.put(task, o)
			args := supervise.SpawnArgs{Profile: "writer", Task: "write alpha for " + task, Key: "k"}
			o.first, o.firstErr = c.Spawn(ctx, args)
			if o.firstErr != nil || o.first.Resumed == supervise.ResumedCompleted {
				return supervise.BrainReport{Text: "lead done"}, nil
			}
			_, o.dup = c.Spawn(ctx, args)
			gate.open(args.Task)
			for {
				a, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000, Kinds: []string{supervise.EventSettled}})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if a.Event == nil {
					return supervise.BrainReport{}, fmt.Errorf("lead %s: no settlement of %s came (%+v)", c.Self(), o.first.WorkerID, a)
				}
				if a.Event.WorkerID == o.first.WorkerID {
					o.output = a.Event.Output
					break
				}
			}
			o.againRes, o.again = c.Spawn(ctx, args)
			other := args
			other.Task = "write beta for " + task
			_, o.conflict = c.Spawn(ctx, other)
			return supervise.BrainReport{Text: "lead done"}, nil
		})
	}
}

// twoLeadKeyRunOn runs root → lead one, then root → lead two (each
// granted 3,000 tokens, 3 iterations and $0.50, awaited before the
// next), each lead under keyLeadBrain, on dir, with set (when not nil)
// adjusting the options.
func twoLeadKeyRunOn(ctx context.Context, t *testing.T, dir string, resume bool, where string, set func(*supervise.Options)) (supervise.SupervisedResult, *twoLeadKeys, error) {
	t.Helper()
	gate := &taskGate{}
	got := &twoLeadKeys{out: map[string]*leadKeyOutcome{}}
	o := nestedOptions(t, gate, nil, nil)
	o.RunDir, o.Resume = dir, resume
	if set != nil {
		set(&o)
	}
	o.ManagerBrain = keyLeadBrain(gate, got)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, lead := range []string{"lead one", "lead two"} {
			tokens, iterations, usd := int64(3000), int64(3), 0.5
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: lead, Label: lead,
				Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations, USD: &usd}})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			checkPoolConserved(t, c.Readout(), where+": root spawned "+lead)
			for {
				a, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000, Kinds: []string{supervise.EventSettled}})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if a.Event == nil || a.Event.WorkerID == sp.WorkerID {
					break
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	return res, got, err
}

// checkLeadKey checks one lead's outcome: the first spawn of its key is
// never refused for another manager's assignment (key-conflict or
// duplicate-key, or in-doubt naming a node outside its subtree), and
// an admitted worker then goes duplicate-key, completed as itself, and
// key-conflict. strict requires the uninterrupted run's outcome: a new
// assignment and every later step.
func checkLeadKey(t *testing.T, o *leadKeyOutcome, where string, strict bool) {
	t.Helper()
	under := func(id supervise.NodeID) bool {
		p, ok := id.Parent()
		return ok && p == o.lead
	}
	code := func(err error) supervise.Code {
		var r *supervise.Refusal
		if errors.As(err, &r) {
			return r.Code
		}
		return ""
	}
	if o.firstErr != nil {
		var r *supervise.Refusal
		if strict || !errors.As(o.firstErr, &r) || r.Code != supervise.CodeInDoubt {
			t.Errorf("%s: lead %s's first spawn of key k: %v, want it admitted (or, resumed, in doubt)", where, o.lead, o.firstErr)
			return
		}
		if id, _, _ := strings.Cut(r.Detail, " "); !under(supervise.NodeID(id)) {
			t.Errorf("%s: lead %s refused in-doubt for %q, not a worker of its own", where, o.lead, r.Detail)
		}
		return
	}
	if !under(o.first.WorkerID) || o.first.Assignment != "key:k" {
		t.Errorf("%s: lead %s's key k answered %+v, want a worker of its own under key:k", where, o.lead, o.first)
	}
	if o.first.Resumed == supervise.ResumedCompleted {
		if strict {
			t.Errorf("%s: lead %s's first spawn of key k replayed %s; nothing of its own ran before", where, o.lead, o.first.WorkerID)
		}
		return
	}
	if strict && o.first.Resumed != supervise.ResumedNone {
		t.Errorf("%s: lead %s's first spawn of key k: resumed %q, want a new assignment", where, o.lead, o.first.Resumed)
	}
	if code(o.dup) != supervise.CodeDuplicateKey {
		t.Errorf("%s: lead %s's key k again while live: %v, want duplicate-key", where, o.lead, o.dup)
	}
	if o.again != nil || o.againRes.Resumed != supervise.ResumedCompleted || o.againRes.WorkerID != o.first.WorkerID {
		t.Errorf("%s: lead %s's key k once settled: %+v, %v; want resumed completed as %s", where, o.lead, o.againRes, o.again, o.first.WorkerID)
	}
	if code(o.conflict) != supervise.CodeKeyConflict {
		t.Errorf("%s: lead %s's key k on another task: %v, want key-conflict", where, o.lead, o.conflict)
	}
}

// Behaviour 44 under two leads, end to end: lead one and lead two each
// spawn the key "k" on a task of their own. Both run and settle, each
// with its own output, under its own lead; within each lead the key is
// duplicate-key while live, completed once settled, key-conflict on
// another task.
func TestNestedSameKeyUnderTwoLeadsRunsTwiceBehaviour44(t *testing.T) {
	res, got, err := twoLeadKeyRunOn(context.Background(), t, t.TempDir(), false, "uncut", nil)
	if err != nil {
		t.Fatal(err)
	}
	writers := map[supervise.NodeID]supervise.NodeID{} // writer → its lead
	for _, lead := range []string{"lead one", "lead two"} {
		o := got.get(lead)
		if o == nil {
			t.Fatalf("%s never ran", lead)
		}
		checkLeadKey(t, o, lead, true)
		if want := "write alpha for " + lead + " DONE"; o.output != want {
			t.Errorf("%s's writer delivered %q, want %q", lead, o.output, want)
		}
		writers[o.first.WorkerID] = o.lead
	}
	if len(writers) != 2 {
		t.Fatalf("the two leads' key k named %v, want two workers", writers)
	}
	for _, n := range res.Tree {
		if lead, ok := writers[n.ID]; ok {
			if n.Parent != lead || n.Key != "k" || n.State != supervise.StateDone {
				t.Errorf("%s: parent %s key %q state %s, want done under %s with key k", n.ID, n.Parent, n.Key, n.State, lead)
			}
			delete(writers, n.ID)
		}
	}
	if len(writers) != 0 {
		t.Errorf("workers %v missing from the result's tree", writers)
	}
}

// Behaviour 44, in doubt after a kill, per manager: the process dies
// right after lead one's keyed writer was journaled spawned (its
// worker running, no terminal receipt). The resumed run drives lead
// one again, whose key k is refused in-doubt naming that writer; lead
// two, spawned by the resumed root, gets the key k admitted as a new
// assignment, and its writer runs and settles.
func TestNestedInDoubtKeyStaysWithItsLeadAfterKillBehaviour44(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := twoLeadKeyRunOn(context.Background(), t, dir, false, "uncut", nil); err != nil {
		t.Fatal(err)
	}
	// Spawned records: lead one, its writer, lead two, its writer.
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2)
	res, got, err := twoLeadKeyRunOn(context.Background(), t, dir, true, "resumed", nil)
	if err != nil {
		t.Fatal(err)
	}
	one, two := got.get("lead one"), got.get("lead two")
	if one == nil || two == nil {
		t.Fatalf("lead one %+v, lead two %+v: want both driven", one, two)
	}
	var r *supervise.Refusal
	if !errors.As(one.firstErr, &r) || r.Code != supervise.CodeInDoubt || !strings.HasPrefix(r.Detail, string(supervise.ChildID(one.lead, 2))+" ") {
		t.Errorf("lead one's key k after the kill: %+v, %v; want refused in-doubt naming %s", one.first, one.firstErr, supervise.ChildID(one.lead, 2))
	}
	checkLeadKey(t, two, "resumed", true)
	if want := "write alpha for lead two DONE"; two.output != want {
		t.Errorf("lead two's writer delivered %q, want %q", two.output, want)
	}
	inDoubt := 0
	for _, n := range res.Tree {
		if n.InDoubt {
			inDoubt++
			if p, _ := n.ID.Parent(); p != one.lead {
				t.Errorf("%s is in doubt; only lead one's writer should be", n.ID)
			}
		}
	}
	if inDoubt != 1 {
		t.Errorf("%d nodes in doubt, want lead one's writer alone", inDoubt)
	}
}

// §13 resume from every cut, per manager: the two-lead run is cut after
// each of its journal appends (a process killed there) on a file
// journal, a SQLite store and a PostgreSQL store, and resumed. On every
// cut each lead's key k answers for its own assignments only: a first
// spawn admitted, completed as its own worker, or in doubt naming its
// own worker — never key-conflict or duplicate-key from the other lead;
// an admitted one then goes duplicate-key, completed, key-conflict.
// Some cut leaves lead one in doubt while lead two runs its key anew.
func TestNestedKeysPerLeadResumeFromEveryCutBehaviour44(t *testing.T) {
	journals := spawnJournals()
	count := func(ctx context.Context, n *atomic.Int64, keep int64) context.Context {
		return supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
			return countAppends{SpawnLog: sl, n: n, keep: keep}
		})
	}
	for _, j := range journals {
		t.Run(j.name, func(t *testing.T) {
			var total atomic.Int64
			if _, _, err := twoLeadKeyRunOn(count(context.Background(), &total, 0), t, t.TempDir(), false, "uncut", j.set(t)); err != nil {
				t.Fatal(err)
			}
			if total.Load() < 8 {
				t.Fatalf("the run made %d appends, want four spawns and settlements at least", total.Load())
			}
			t.Logf("the uncut run made %d appends", total.Load())
			split := 0 // cuts with lead one in doubt and lead two's key run anew
			for keep := int64(1); keep < total.Load(); keep++ {
				where := fmt.Sprintf("%s, resumed after %d of %d appends", j.name, keep, total.Load())
				dir, set := t.TempDir(), j.set(t)
				var n atomic.Int64
				_, _, _ = twoLeadKeyRunOn(count(context.Background(), &n, keep), t, dir, false, where+" (cut run)", set)
				res, got, err := twoLeadKeyRunOn(context.Background(), t, dir, true, where, set)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if !res.Resumed {
					t.Fatalf("%s: the run was not resumed", where)
				}
				for _, lead := range []string{"lead one", "lead two"} {
					if o := got.get(lead); o != nil {
						checkLeadKey(t, o, where+": "+lead, false)
					}
				}
				one, two := got.get("lead one"), got.get("lead two")
				if one != nil && two != nil && one.firstErr != nil && two.firstErr == nil && two.first.Resumed == supervise.ResumedNone {
					split++
				}
				if res.Reason == supervise.ReasonBudgetExhausted {
					t.Errorf("%s: the run ended budget-exhausted", where)
				}
			}
			if split == 0 {
				t.Errorf("no cut left lead one's key in doubt while lead two ran its own")
			}
		})
	}
}

package graph_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// taskBrain is a caller-owned root brain that records each task it is
// driven on, delegates to coder once and awaits it.
type taskBrain struct {
	mu    sync.Mutex
	tasks []string
}

func (b *taskBrain) brain() graph.Brain {
	return graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		b.mu.Lock()
		b.tasks = append(b.tasks, task)
		b.mu.Unlock()
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix the failing test"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "done"}, nil
	})
}

// resumeCheckOptions are options for starGraph with a recording brain,
// its journal in a run dir or, with st, in a store.
func resumeCheckOptions(t *testing.T, dir string, st *memory.Store, b *taskBrain) graph.Options {
	o := options(t, kernelWorkers(t, workerScript), nil)
	o.Brain = b.brain()
	o.Supervise.RunDir = dir
	if st != nil {
		o.Supervise.RunDir, o.Supervise.SpawnStore = "", st
	}
	return o
}

// RES-03, P7, behaviour 46 for a graph: a resume without a task (the
// caller's Options.Task empty) drives the root on the task the run
// started with, brief included, from a run dir or a store journal; and
// JournaledTask reads the caller's part back.
func TestGraphResumeAdoptsTheJournaledTaskBehaviour46(t *testing.T) {
	for _, where := range []string{"run dir", "store"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			var st *memory.Store
			if where == "store" {
				st = memory.New(nil)
			}
			first := &taskBrain{}
			o := resumeCheckOptions(t, dir, st, first)
			res, err := graph.RunGraph(context.Background(), starGraph(t), o)
			if err != nil || res.Result.Status != supervise.StatusWinner {
				t.Fatalf("first run: %v %s", err, res.Result.Status)
			}
			task, err := graph.JournaledTask(context.Background(), o.Supervise)
			if err != nil || task != "Make the build green." {
				t.Fatalf("JournaledTask = %q, %v; want the caller's task", task, err)
			}

			second := &taskBrain{}
			o = resumeCheckOptions(t, dir, st, second)
			o.Task, o.Supervise.Resume = "", true
			res, err = graph.RunGraph(context.Background(), starGraph(t), o)
			if err != nil || !res.Result.Resumed {
				t.Fatalf("resume without a task: %v, resumed %v", err, res.Result.Resumed)
			}
			if diff := cmp.Diff(first.tasks, second.tasks); diff != "" {
				t.Errorf("the resumed root's task (-first run +resumed):\n%s", diff)
			}
		})
	}
}

// RES-03, P7, behaviour 46 for a graph: a graph whose budget changed
// since the run started (raised, or a cap dropped) is refused like a
// changed topology, and so is another task; nothing runs.
func TestGraphResumeRefusesAChangedBudgetOrTaskBehaviour46(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(g *graph.Graph, o *graph.Options)
		want   supervise.ResumeMismatchError
	}{
		{"more tokens", func(g *graph.Graph, _ *graph.Options) { g.Budget.Tokens = i64(20_000) },
			supervise.ResumeMismatchError{Field: "budget.maxTokens", Pointer: "/budget/maxTokens", Journaled: "10000", Given: "20000"}},
		{"the dollar cap dropped", func(g *graph.Graph, _ *graph.Options) { g.Budget.MicroUSD = nil },
			supervise.ResumeMismatchError{Field: "budget.maxUsd", Pointer: "/budget/maxUsd", Journaled: "1", Given: "none"}},
		{"a resource added", func(g *graph.Graph, _ *graph.Options) { g.Budget.Resources = map[string]int64{"gpu": 3} },
			supervise.ResumeMismatchError{Field: "budget.resources.gpu", Pointer: "/budget/resources/gpu", Journaled: "none", Given: "3"}},
		{"another task", func(_ *graph.Graph, o *graph.Options) { o.Task = "Make it red." },
			supervise.ResumeMismatchError{Field: "Task", Pointer: "/task", Journaled: `"Make the build green."`, Given: `"Make it red."`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := resumeCheckOptions(t, dir, nil, &taskBrain{})
			if _, err := graph.RunGraph(context.Background(), starGraph(t), o); err != nil {
				t.Fatal(err)
			}
			second := &taskBrain{}
			o = resumeCheckOptions(t, dir, nil, second)
			o.Supervise.Resume = true
			g := starGraph(t)
			b := *g.Budget
			g.Budget = &b
			tc.change(&g, &o)
			_, err := graph.RunGraph(context.Background(), g, o)
			var re *supervise.ResumeError
			var m *supervise.ResumeMismatchError
			if !errors.As(err, &re) || !errors.As(err, &m) {
				t.Fatalf("err = %v; want a *supervise.ResumeError wrapping a *supervise.ResumeMismatchError", err)
			}
			if diff := cmp.Diff(tc.want, *m); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if len(second.tasks) != 0 {
				t.Errorf("a refused resume drove the root %d times", len(second.tasks))
			}
		})
	}
}

// A graph whose brief changed (a node's description) no longer matches
// the journaled task: refused, before anything runs.
func TestGraphResumeRefusesAnotherBrief(t *testing.T) {
	dir := t.TempDir()
	o := resumeCheckOptions(t, dir, nil, &taskBrain{})
	if _, err := graph.RunGraph(context.Background(), starGraph(t), o); err != nil {
		t.Fatal(err)
	}
	g := starGraph(t)
	desc := "writes the fix"
	g.Nodes[1].Profile.Description = &desc
	second := &taskBrain{}
	o = resumeCheckOptions(t, dir, nil, second)
	o.Task, o.Supervise.Resume = "", true
	var re *supervise.ResumeError
	if _, err := graph.RunGraph(context.Background(), g, o); !errors.As(err, &re) || len(second.tasks) != 0 {
		t.Fatalf("resume with another brief: %v, driven %d times; want a *supervise.ResumeError and nothing run", err, len(second.tasks))
	}
}

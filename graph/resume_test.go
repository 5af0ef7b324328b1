package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// resumeChildDir, when set, makes the re-executed test binary run the
// graph of resumeGraph in that run dir until it is killed.
const resumeChildDir = "AGENTRT_GRAPH_RESUME_CHILD_DIR"

func TestMain(m *testing.M) {
	if os.Getenv(storeKillAt) != "" {
		if err := storeKillChild(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(3)
	}
	if dir := os.Getenv(resumeChildDir); dir != "" {
		child := graphUntilKilled
		if os.Getenv(resumeChildBeforeReviewer) != "" {
			child = graphUntilKilledBeforeReviewer
		}
		if err := child(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(3) // the parent kills the child before it can end
	}
	os.Exit(m.Run())
}

// resumeGraph is driver → coder, driver → reviewer, and the
// failure-triage lens over coder reporting to the driver; built without
// a testing.T so the child process can build it too.
func resumeGraph() (graph.Graph, graph.Options, error) {
	parse := func(doc string) (*profile.Profile, error) { return profile.Parse([]byte(doc)) }
	driver, err := parse(`{"name": "driver", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	if err != nil {
		return graph.Graph{}, graph.Options{}, err
	}
	var nodes []graph.Node
	nodes = append(nodes, graph.Node{ID: "driver", Profile: driver})
	for _, id := range []string{"coder", "reviewer"} {
		p, err := parse(`{"name": "` + id + `", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/` + id + `"}}`)
		if err != nil {
			return graph.Graph{}, graph.Options{}, err
		}
		nodes = append(nodes, graph.Node{ID: id, Profile: p})
	}
	reg, err := graph.NewRegistry(map[string]string{"delegate/coder/v1": coderDirective, "delegate/reviewer/v1": reviewDirective, "analyze/critic/v2": critDirective})
	if err != nil {
		return graph.Graph{}, graph.Options{}, err
	}
	tokens, iterations, per, one := int64(10_000), int64(10), int64(1_000), int64(1)
	g := graph.Graph{Nodes: nodes, Deliverable: passing, Budget: &ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		Edges: []graph.Edge{
			{Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1"},
			{Kind: graph.Delegates, From: "driver", To: "reviewer", Directive: "delegate/reviewer/v1"},
			{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"},
		}}
	o := graph.Options{Task: "Make the build green.", Registry: reg, Brain: resumeBrain(),
		Supervise: supervise.Options{PerWorker: ledger.Budget{Tokens: &per, Iterations: &one}, RunID: "g", Resume: true}}
	return g, o, nil
}

// resumeBrain is replay-safe: it delegates to coder, awaits its settle
// and the lens's finding, then delegates to reviewer and awaits it.
func resumeBrain() graph.Brain {
	return graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		steps := []struct{ node, task string }{{"coder", "Fix test_login."}, {"reviewer", "Review the login patch."}}
		for i, s := range steps {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: s.node, Task: s.task}); err != nil {
				return supervise.BrainReport{}, err
			}
			for range 2 - i {
				if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
}

// resumeExecutor runs coder and lens tasks on lensScript through the
// kernel and counts executions per node; a reviewer calls review.
type resumeExecutor struct {
	inner  supervise.Executor
	review func(ctx context.Context) (supervise.WorkResult, error)
	mu     sync.Mutex
	runs   map[string]int
}

func newResumeExecutor(review func(ctx context.Context) (supervise.WorkResult, error)) (*resumeExecutor, error) {
	var s scripted.Script
	if err := json.Unmarshal([]byte(lensScript), &s); err != nil {
		return nil, err
	}
	return &resumeExecutor{inner: &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)},
		review: review, runs: map[string]int{}}, nil
}

func (e *resumeExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	name := *w.Profile.Name
	e.mu.Lock()
	e.runs[name]++
	e.mu.Unlock()
	if name == "reviewer" {
		return e.review(ctx)
	}
	return e.inner.Execute(ctx, w)
}

func (e *resumeExecutor) ReportsUsage() bool { return true }

func (e *resumeExecutor) count(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[name]
}

// graphUntilKilled is the child: its reviewer announces itself and then
// never returns.
func graphUntilKilled(dir string) error {
	g, o, err := resumeGraph()
	if err != nil {
		return err
	}
	exec, err := newResumeExecutor(func(ctx context.Context) (supervise.WorkResult, error) {
		if err := os.WriteFile(filepath.Join(dir, "reviewer-started"), nil, 0o600); err != nil {
			return supervise.WorkResult{}, err
		}
		select {}
	})
	if err != nil {
		return err
	}
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	_, err = graph.RunGraph(context.Background(), g, o)
	if err == nil {
		err = errors.New("the child's graph run ended")
	}
	return err
}

// RES-03 for runGraph (§3.7 over §3.6 "Persistence & resume", behaviour
// 46): a graph run is killed with SIGKILL while its reviewer runs, after
// the coder settled and the lens analysed it. Resumed on the same run
// dir, it runs neither the coder nor the lens again (executor counts),
// restores the edge ledger and caps from the journal, charges the killed
// reviewer at its ceiling, runs the reviewer once more and settles with
// the coder's result as winner.
func TestKilledGraphResumesWithoutRerunningSettledNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), resumeChildDir+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "reviewer-started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never started its reviewer; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if exec.count("coder") != 0 || exec.count("analyst-failure-triage") != 0 || exec.count("reviewer") != 1 {
		t.Errorf("the resumed process ran coder %d, the lens %d, reviewer %d times; want 0, 0, 1",
			exec.count("coder"), exec.count("analyst-failure-triage"), exec.count("reviewer"))
	}
	if !res.Result.Resumed || res.Result.Winner == nil || res.Result.Winner.Node != "g:s1" {
		t.Fatalf("result %+v, want a resumed run won by the coder g:s1", res.Result)
	}
	got := ledgerRows(res.Ledger)
	want := []ledgerRow{
		{"delegates:driver->coder", 1, graph.OutcomeDelivered, "g:s1"},
		{"analyzes:failure-triage:coder->driver", 1, graph.OutcomeDelivered, "g:s1"},
		{"delegates:driver->reviewer", 1, graph.OutcomeDelivered, "g:s3"},
		{"delegates:driver->reviewer", 2, graph.OutcomeDelivered, "g:s4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger across the restart (-want +got):\n%s", diff)
	}
	var gaps []string
	for _, gp := range res.Result.SpendGaps {
		gaps = append(gaps, string(gp.ID)+" "+string(gp.Kind))
	}
	if diff := cmp.Diff([]string{"g:s3 " + string(supervise.GapNeverSettled)}, gaps); diff != "" {
		t.Errorf("spend gaps (-want +got):\n%s", diff)
	}
	// coder 2 + lens 5 + the killed reviewer at its 1000 ceiling + the
	// reviewer again 4.
	if s := res.Result.Spent; s.Tokens != 1011 || s.TokensKnown {
		t.Errorf("spent %+v", s)
	}
}

// A graph run without Resume on a run dir that holds a journal is
// refused, not overwritten (behaviour 47), and resuming with a graph
// whose edges differ from the journal's is refused before anything runs.
func TestGraphResumeRefusals(t *testing.T) {
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	o.Supervise.Resume = false
	var exists *supervise.RunExistsError
	if _, err := graph.RunGraph(context.Background(), g, o); !errors.As(err, &exists) {
		t.Errorf("without Resume: %v, want *supervise.RunExistsError", err)
	}
	o.Supervise.Resume = true
	g.Edges = g.Edges[:2] // the lens edge is gone
	var re *supervise.ResumeError
	if _, err := graph.RunGraph(context.Background(), g, o); !errors.As(err, &re) || !strings.Contains(re.Reason, "analyzes:failure-triage:coder->driver") {
		t.Errorf("resuming with another graph: %v, want a *supervise.ResumeError naming the missing edge", err)
	}
}

// The process dies after the coder settled and before the lens over it
// started (its settlement hook never returned): the journal ends at the
// coder's settled record. The resumed run runs the hook again before the
// driver drives, so the lens runs once, its analyzes traversal is
// ledgered once and the coder is not run again.
func TestGraphLensCutOffBySettleCrashRunsOnResume(t *testing.T) {
	g, o, dir := passingResumeGraph(t)
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var kept []supervise.Record
	for _, r := range recs {
		kept = append(kept, r)
		if r.Kind == supervise.KindSettled && r.Node == "g:s1" {
			if !r.Hook {
				t.Fatal("the coder's settled record does not mark its settlement hook")
			}
			break
		}
	}
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range kept {
		v, err := canonjson.ToValue(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	o.Supervise.Executor = exec
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if exec.count("coder") != 0 || exec.count("analyst-failure-triage") != 1 {
		t.Errorf("the resumed run ran coder %d and the lens %d times; want 0 and 1", exec.count("coder"), exec.count("analyst-failure-triage"))
	}
	lensRows := 0
	for _, r := range res.Ledger {
		if r.Kind == graph.Analyzes {
			lensRows++
			if r.Outcome != graph.OutcomeDelivered || r.Traversal != 1 {
				t.Errorf("lens row %+v, want traversal 1 delivered", r)
			}
		}
	}
	if lensRows != 1 {
		t.Errorf("%d analyzes rows, want 1: %+v", lensRows, res.Ledger)
	}
	if res.Result.Winner == nil || res.Result.Winner.Node != "g:s1" {
		t.Errorf("result %+v, want the coder g:s1 to win", res.Result)
	}
}

// ledgerRow is what a ledger test compares of a LedgerRow.
type ledgerRow struct {
	Edge      string
	Traversal int
	Outcome   graph.Outcome
	Worker    supervise.NodeID
}

func ledgerRows(rows []graph.LedgerRow) []ledgerRow {
	var out []ledgerRow
	for _, r := range rows {
		out = append(out, ledgerRow{r.Edge, r.Traversal, r.Outcome, r.WorkerID})
	}
	return out
}

// passingResumeGraph is resumeGraph on a fresh run dir (returned too)
// whose reviewer passes (reviewPasses).
func passingResumeGraph(t *testing.T) (graph.Graph, graph.Options, string) {
	t.Helper()
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	return g, o, dir
}

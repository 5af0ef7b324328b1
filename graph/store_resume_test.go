package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 "Persistence & resume" with the journal in a run store
// (Supervise.SpawnStore): the graph's edge records are in the store, not
// a run dir, and a resume with a graph of another topology is refused
// from them before anything runs — naming the store's run — while the
// same graph resumes the ended run and answers with its journaled
// result, running nothing again.
func TestStoreJournalResumeChecksTopology(t *testing.T) {
	st := memory.New(nil)
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	o.Supervise.Executor, o.Supervise.SpawnStore, o.Supervise.Resume = exec, st, false
	first, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Result.Status != supervise.StatusWinner || len(first.Ledger) == 0 {
		t.Fatalf("the first run: %s, %d ledger rows", first.Result.Status, len(first.Ledger))
	}
	runs := exec.count("coder") + exec.count("reviewer")

	other, _, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	other.Edges = other.Edges[:2] // no failure-triage edge: another topology
	o.Supervise.Resume, o.Supervise.ReturnEnded = true, true
	var re *supervise.ResumeError
	if _, err := graph.RunGraph(context.Background(), other, o); !errors.As(err, &re) || re.RunDir != "run g in the store" ||
		!strings.Contains(re.Reason, "analyzes:failure-triage:coder->driver") {
		t.Fatalf("resuming with another topology: %v, want a *supervise.ResumeError naming the store's run and the edge", err)
	}
	again, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Result.Status != supervise.StatusWinner || !again.Result.Resumed || len(again.Ledger) != len(first.Ledger) {
		t.Errorf("resuming the ended run: %s, resumed %v, %d ledger rows (first run: %d)", again.Result.Status, again.Result.Resumed, len(again.Ledger), len(first.Ledger))
	}
	if n := exec.count("coder") + exec.count("reviewer"); n != runs {
		t.Errorf("resuming the ended run executed %d more workers", n-runs)
	}
}

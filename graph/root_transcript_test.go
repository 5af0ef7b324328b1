package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// planModel is a root model that makes the call of its plan its
// transcript has reached (one per tool turn already in it), then
// answers: what a real model does when a conversation is handed back to
// it. It counts its calls.
type planModel struct {
	plan  []contract.ChatEvent
	text  string
	calls atomic.Int64
}

func (m *planModel) Turn(_ context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.calls.Add(1)
	step := 0
	for _, msg := range msgs {
		if msg.Role == contract.ChatAssistant && len(msg.ToolCalls) > 0 {
			step++
		}
	}
	return func(yield func(contract.ChatEvent, error) bool) {
		ev := scripted.Text(m.text)
		if step < len(m.plan) {
			ev = m.plan[step]
		}
		if yield(ev, nil) {
			yield(scripted.Usage(10, 5, contract.UsageDelta), nil)
		}
	}
}

// cutBeforeNextTurn truncates dir's spawn journal where a process that
// died before the root's next turn left it: after the coder's
// settlement and after the root's transcript record holding the tool
// message that answered call id, whichever came later.
func cutBeforeNextTurn(t *testing.T, dir, id string) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	keep := -1
	for i, line := range lines {
		var r supervise.Record
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		if r.Kind == supervise.KindSettled && r.Node == "g:s1" {
			keep = i
		}
		for _, m := range r.Messages {
			if r.Kind == supervise.KindTranscript && m.Role == contract.ChatTool && m.ToolCallID == id {
				keep = i
			}
		}
	}
	if keep < 0 {
		t.Fatal("the journal holds no settlement of the coder")
	}
	if err := os.WriteFile(path, bytes.Join(lines[:keep+1], nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// RES-03 for a graph's root (§3.7: one supervise run; §3.6: a resumed
// manager goes on from its journaled conversation): a graph whose root
// delegated to its coder over an edge capped at one traversal, and took
// the coder's settlement, dies before the root's next turn. Resumed, the
// root is asked only that next turn — not its delegation again, which
// would have spent the edge's cap a second time and ended the run
// no-winner — the coder is not run again, and the ledger holds its one
// traversal.
func TestResumedGraphRootGoesOnFromItsTranscript(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(1)
	var coderRuns atomic.Int64
	exec := supervise.ExecutorFunc(func(_ context.Context, w supervise.Work) (supervise.WorkResult, error) {
		coderRuns.Add(1)
		return supervise.WorkResult{Text: "the patch", Spent: ledgerSpend(1)}, nil
	})
	plan := []contract.ChatEvent{
		call("s1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "fix"}),
		call("w1", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
	}
	dir := t.TempDir()
	first := &planModel{plan: plan, text: "done"}
	o := options(t, exec, first)
	o.Supervise.RunDir = dir
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	cutBeforeNextTurn(t, dir, "w1")

	second := &planModel{plan: plan, text: "done"}
	o = options(t, exec, second)
	o.Supervise.RunDir, o.Supervise.Resume = dir, true
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Result.Winner; w == nil || w.Text != "the patch" {
		t.Errorf("the resumed graph: %s %s, winner %+v; want the coder's patch", res.Result.Status, res.Result.Reason, w)
	}
	if n := second.calls.Load(); n != 1 {
		t.Errorf("the resumed root was asked %d model turns, want 1 (its answer)", n)
	}
	if n := coderRuns.Load(); n != 1 {
		t.Errorf("the coder ran %d times, want 1", n)
	}
	var coderRows int
	for _, row := range res.Ledger {
		if row.To == "coder" {
			coderRows++
		}
	}
	if coderRows != 1 || len(res.ExhaustedEdges) != 0 && res.Result.Winner == nil {
		t.Errorf("ledger %+v, exhausted %v; want the coder's one traversal", res.Ledger, res.ExhaustedEdges)
	}
}

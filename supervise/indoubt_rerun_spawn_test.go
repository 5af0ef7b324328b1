package supervise_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// bindingExecutor binds every worker to an execution named after its
// node, then answers; as a Recoverer it finds every execution still
// running (its holder's lease held), so a worker left unsettled stays in
// doubt. It counts executions by task.
type bindingExecutor struct {
	mu   sync.Mutex
	runs map[string]int
}

func (e *bindingExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if err := w.Bind(ctx, "exec-"+string(w.Node)); err != nil {
		return supervise.WorkResult{}, err
	}
	e.mu.Lock()
	e.runs[w.Task]++
	e.mu.Unlock()
	return supervise.WorkResult{Text: "DONE: " + w.Task, Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}}, nil
}

func (e *bindingExecutor) ReportsUsage() bool { return true }

func (e *bindingExecutor) Recover(context.Context, supervise.RecoverWork) (supervise.Recovered, error) {
	return supervise.Recovered{}, errors.New("the execution is still running: its holder's lease holds")
}

// cutAfterBindOf rewrites the run dir's journal as a process SIGKILLed
// once worker node's execution was bound, before the manager's spawn
// call that made it had its result journaled, left it: every record up
// to node's spawn, then node's execution-bound record, and nothing else
// (the transcript's result of the spawn call, what the manager did next,
// node's settlement and the run's end are gone). The worker's bind and
// the manager's checkpoint of the call's result are separate appends on
// separate goroutines; under load the bind lands first. With answered
// set, the transcript's tool message answering that call id is kept too.
func cutAfterBindOf(t *testing.T, dir string, node supervise.NodeID, answered string) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	spawned, bound := false, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Kind, Node string
			Messages   []struct{ ToolCallID string }
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		switch {
		case !spawned:
			spawned = rec.Kind == supervise.KindSpawned && rec.Node == string(node)
		case rec.Kind == supervise.KindExecutionBound && rec.Node == string(node):
			bound = true
		case answered != "" && rec.Kind == supervise.KindTranscript && len(rec.Messages) > 0 && rec.Messages[0].ToolCallID == answered:
		default:
			continue
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if !spawned || !bound {
		t.Fatalf("no spawn (%v) or execution bound (%v) of %s in %s", spawned, bound, node, path)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A router manager killed after its second spawn_worker call's child
// bound its execution and before the call's result was journaled
// (TestResumedRunDoesWhatAnUninterruptedOneDoes, "graph, manager
// script", under load) is resumed with that call unanswered: run again
// exactly as made, it must replay the journaled child — in doubt, its
// execution still running — not spawn and run a third worker.
//
// A later call of the resumed manager with the same request is another
// call: it spawns the work anew (a manager that redoes the in-doubt
// work), even when its id is one the journal's earlier process never
// used.
func TestResumedSpawnCallReplaysItsInDoubtChild(t *testing.T) {
	for _, tt := range []struct {
		name           string
		answered, redo bool
	}{
		{"spawn unanswered", false, false},
		{"spawn unanswered, then redone", false, true},
		// The journal's answer to the spawn call names the child: no call
		// is run again, and the redo, whose call is journaled before it
		// runs, is no call of the journal's.
		{"spawn answered, then redone", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) { resumedSpawnCall(t, tt.answered, tt.redo) })
	}
}

func resumedSpawnCall(t *testing.T, answered, redo bool) {
	spawn := func(id, task string) scripted.ChatTurn {
		return scripted.ChatTurn{Events: []contract.ChatEvent{call(id, supervise.VerbSpawnWorker, spawnArgs(task)), managerUsage(10, 5, 0.0001)}}
	}
	await := func(id string) scripted.ChatTurn {
		return scripted.ChatTurn{Events: []contract.ChatEvent{call(id, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 5, 0.0001)}}
	}
	answer := scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text("done"), managerUsage(10, 5, 0.0001)}}
	script := scripted.ChatScript{FromConversation: true, Turns: []scripted.ChatTurn{
		spawn("s1", "first"), await("a1"), spawn("s2", "second"), await("a2"), answer}}
	resumed := script
	if redo {
		resumed.Turns = []scripted.ChatTurn{spawn("s1", "first"), await("a1"), spawn("s2", "second"), await("a2"),
			spawn("s3", "second"), await("a3"), answer}
	}
	dir := t.TempDir()
	run := func(resume bool) (supervise.SupervisedResult, *bindingExecutor) {
		exec := &bindingExecutor{runs: map[string]int{}}
		s := script
		if resume {
			s = resumed
		}
		o := baseOptions(t, exec, scripted.NewChatModel(s))
		o.RunDir, o.Resume = dir, resume
		// No dollar ceiling (as agentrt graph's): the in-doubt worker's
		// unknown spend leaves the pool able to admit another.
		o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
		if err != nil {
			t.Fatal(err)
		}
		return res, exec
	}
	run(false)
	keep := ""
	if answered {
		keep = "s2"
	}
	cutAfterBindOf(t, dir, "run1:s2", keep)

	res, exec := run(true)
	want := []supervise.NodeID{"run1:s1", "run1:s2"}
	if redo {
		want = append(want, "run1:s3")
	}
	if n := exec.runs["second"]; n != len(want)-2 {
		t.Errorf("the resumed run executed the in-doubt worker's task %d times, want %d", n, len(want)-2)
	}
	var ids []supervise.NodeID
	for _, n := range res.Tree {
		ids = append(ids, n.ID)
		if n.ID == "run1:s2" && !n.InDoubt {
			t.Errorf("run1:s2, killed in flight, is not in doubt: %+v", n)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("the resumed run's workers are %v, want %v", ids, want)
	}
	// The call run again answers with the journaled child.
	answers := journaledToolAnswers(t, dir)
	if a := answers["s2"]; !strings.Contains(a, `"workerId":"run1:s2"`) {
		t.Errorf("the spawn call run again answered %q, want its journaled child run1:s2", a)
	}
	// The child is in doubt, and the answer says so: never a completed
	// result, nor (resumed absent) a worker live again.
	if a := answers["s2"]; !answered && (!strings.Contains(a, `"inDoubt":true`) || strings.Contains(a, `"resumed"`)) {
		t.Errorf("the spawn call run again answered %q, want its child named in doubt, not resumed", a)
	}
	if a := answers["s3"]; redo && !strings.Contains(a, `"workerId":"run1:s3"`) {
		t.Errorf("the later spawn call answered %q, want a new worker run1:s3", a)
	}
}

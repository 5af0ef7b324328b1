package cli_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// journalShape is what a supervised run did, as its journal tells it:
// the spawns (node and profile, in order), the graph's edge rows (edge,
// traversal and worker) and how many executions each node started.
type journalShape struct {
	Spawns     []string
	Edges      []string
	Executions map[supervise.NodeID]int
}

func shapeOf(t *testing.T, dir string) journalShape {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := journalShape{Executions: map[supervise.NodeID]int{}}
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindSpawned:
			s.Spawns = append(s.Spawns, string(r.Node)+" "+r.Profile)
		case supervise.KindEdge:
			edge, _ := r.Data.Get("edge")
			n, _ := r.Data.Get("traversal")
			s.Edges = append(s.Edges, fmt.Sprintf("%s #%s %s", edge.Str(), canonjson.Marshal(n), r.Node))
		case supervise.KindExecutionBound:
			s.Executions[r.Node]++
		}
	}
	return s
}

// A resumed run does what an uninterrupted one does: agentrt graph and
// agentrt supervise, their scripted manager on the default plan or a
// --manager-script, are SIGKILLed once the first worker settled and the
// second was spawned (its edge row journaled) and runs; agentrt ...
// --resume then finishes the run. The resumed manager goes on from its
// recorded conversation instead of playing its plan from the start, so
// the journal holds the spawns and edge rows of the uninterrupted run —
// the same node ids, no worker spawned twice, the settled one run once —
// and the same winner. The second worker, killed in flight with its
// kernel run's lease still held, stays in doubt; the default plan, seeing
// the run idle without its settlement, spawns that work again once (the
// next node, the edge's next traversal), and a script that says nothing
// of it does not.
func TestResumedRunDoesWhatAnUninterruptedOneDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	graphFile := writeFile(t, "graph.json", twoNodeGraph)
	dirs := writeFile(t, "directives.json", twoNodeDirectives)
	graphSlow := writeFile(t, "graph-slow.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "reviewing"}, {"delayMs": 600000}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
	graphFast := writeFile(t, "graph-fast.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "review: the patch is safe"}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
	spawn := func(profile, task string) string {
		return `{"calls": [{"verb": "spawn_worker", "args": {"profile": "` + profile + `", "task": "` + task + `"}}]}`
	}
	graphScript := managerScript(t, `{"turns": [`+spawn("coder", "Fix it.")+`, `+awaitOne+`, `+spawn("reviewer", "Review it.")+`, `+awaitOne+`, `+answerDone+`]}`)
	superviseScript := writeFile(t, "supervise-manager.json", `{"turns": [`+spawn("note-writer", "Write the first note.")+`, `+awaitOne+`, `+
		spawn("note-writer", "Write the second note.")+`, `+awaitOne+`, `+answerDone+`]}`)
	superviseSlow := writeFile(t, "supervise-slow.json", `{"turns": [
  {"match": "second", "repeat": true, "steps": [{"text": "writing"}, {"delayMs": 600000}]},
  {"repeat": true, "steps": [{"text": "Done: the note."}]}]}`)
	superviseFast := writeFile(t, "supervise-fast.json", `{"turns": [{"repeat": true, "steps": [{"text": "Done: the note."}]}]}`)
	raw, err := os.ReadFile(noteWriter)
	if err != nil {
		t.Fatal(err)
	}
	second := writeFile(t, "second.json", strings.Replace(string(raw), `"name": "note-writer"`, `"name": "second-writer"`, 1))
	// With --max-live 1 the default plan runs note-writer, then
	// second-writer: the first prompt plays the first turn, every later
	// one the slow turn.
	superviseDefaultSlow := writeFile(t, "supervise-default-slow.json", `{"turns": [
  {"steps": [{"text": "Done: the note."}]},
  {"repeat": true, "steps": [{"text": "writing"}, {"delayMs": 600000}]}]}`)

	tests := []struct {
		name string
		// args are the run's arguments but the run dir, --script and --resume.
		args       func(db string) []string
		slow, fast string
		// running is the profile of the worker the kill finds running.
		running string
		// redo is whether the manager spawns the lost work again: the
		// default plan does, a script that says nothing of it does not.
		redo bool
	}{
		{"graph, default plan", func(db string) []string {
			return []string{"graph", graphFile, "--task", "Make the login test pass.", "--directives", dirs, "--run-id", "login", "--db", db, "--expect", "patch", "--json"}
		}, graphSlow, graphFast, "reviewer", true},
		{"graph, manager script", func(db string) []string {
			return []string{"graph", graphFile, "--task", "Make the login test pass.", "--directives", dirs, "--run-id", "login", "--db", db, "--expect", "patch",
				"--manager-script", graphScript, "--json"}
		}, graphSlow, graphFast, "reviewer", false},
		{"supervise, manager script", func(db string) []string {
			return []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--run-id", "rel", "--db", db,
				"--manager-script", superviseScript, "--worker-tokens", "10000", "--json"}
		}, superviseSlow, superviseFast, "note-writer", false},
		{"supervise, default plan", func(db string) []string {
			return []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--worker", second, "--max-live", "1",
				"--run-id", "rel", "--db", db, "--worker-tokens", "10000", "--json"}
		}, superviseDefaultSlow, superviseFast, "second-writer", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Uninterrupted.
			plain := t.TempDir()
			out, errOut, code := run(t, "", append(tt.args(filepath.Join(t.TempDir(), "runs.db")), "--run-dir", plain, "--script", tt.fast)...)
			if code != 0 {
				t.Fatalf("uninterrupted: exit %d\n%s%s", code, out, errOut)
			}
			want, wantRes := shapeOf(t, plain), decode(t, out)

			// Killed, then resumed.
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			var stderr strings.Builder
			child := startChild(t, func(c *exec.Cmd) { c.Stderr = &stderr }, append(tt.args(db), "--run-dir", dir, "--script", tt.slow)...)
			// inFlight is a worker that started an execution and did not
			// settle, once another one settled ("" until then).
			inFlight := func() supervise.NodeID {
				recs, _, err := supervise.ReadRunDir(context.Background(), dir)
				if err != nil {
					return ""
				}
				bound, settled := map[supervise.NodeID]bool{}, map[supervise.NodeID]bool{}
				var order []supervise.NodeID
				for _, r := range recs {
					switch r.Kind {
					case supervise.KindSettled:
						settled[r.Node] = true
					case supervise.KindExecutionBound:
						bound[r.Node] = true
						order = append(order, r.Node)
					}
				}
				for _, id := range order {
					if len(settled) > 0 && !settled[id] {
						return id
					}
				}
				return ""
			}
			var running supervise.NodeID
			for deadline := time.Now().Add(2 * time.Minute); running == ""; running = inFlight() {
				if time.Now().After(deadline) {
					t.Fatalf("the child never got to its second worker; stderr:\n%s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := child.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = child.Wait()
			killed := shapeOf(t, dir)

			out, errOut, code = run(t, "", append(tt.args(db), "--run-dir", dir, "--script", tt.fast, "--resume")...)
			if code != 0 {
				t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
			}
			got, res := shapeOf(t, dir), decode(t, out)
			wantSpawns, wantEdges, wantExec := want.Spawns, want.Edges, killed.Executions
			if tt.redo {
				// The lost work, spawned again as the next node.
				redone := supervise.NodeID(fmt.Sprintf("%s:s%d", member(res, "runId").Str(), len(want.Spawns)+1))
				wantSpawns = append(slices.Clone(wantSpawns), string(redone)+" "+tt.running)
				if len(wantEdges) > 0 {
					wantEdges = append(slices.Clone(wantEdges), fmt.Sprintf("delegates:driver->%s #2 %s", tt.running, redone))
				}
				wantExec = maps.Clone(wantExec)
				wantExec[redone] = 1
			}
			if diff := cmp.Diff(wantSpawns, got.Spawns); diff != "" {
				t.Errorf("spawns (-want +resumed):\n%s", diff)
			}
			if diff := cmp.Diff(wantEdges, got.Edges); diff != "" {
				t.Errorf("edge rows (-want +resumed):\n%s", diff)
			}
			if diff := cmp.Diff(wantExec, got.Executions); diff != "" {
				t.Errorf("executions started (-want +resumed):\n%s", diff)
			}
			if w, g := member(member(wantRes, "winner"), "node").Str(), member(member(res, "winner"), "node").Str(); w == "" || w != g {
				t.Errorf("winner %q, uninterrupted %q:\n%s", g, w, out)
			}
			// Its progress says what it replayed and what it could not.
			if !strings.Contains(errOut, "2 workers spawned, 1 settled (replayed, not run again)") || !strings.Contains(errOut, "in doubt "+string(running)+": ") {
				t.Errorf("the resume's progress does not say what it replayed and what is in doubt:\n%s", errOut)
			}
			inDoubt := false
			for _, w := range member(res, "workers").Items() {
				if member(w, "id").Str() == string(running) {
					inDoubt = member(w, "inDoubt").Bool() && member(w, "profile").Str() == tt.running
				}
			}
			if !inDoubt {
				t.Errorf("the worker killed in flight, %s (%s), is not in doubt:\n%s", running, tt.running, out)
			}
		})
	}
}

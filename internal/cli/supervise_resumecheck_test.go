package cli_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/supervise"
)

// spawnedTasks are the tasks of the worker spawns journaled in dir.
func spawnedTasks(t *testing.T, dir string) []string {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, r := range recs {
		if r.Kind == supervise.KindSpawned {
			tasks = append(tasks, r.Task)
		}
	}
	return tasks
}

// RES-03, P7 (restart never mints capacity), behaviour 46 through the
// CLI: agentrt supervise --resume without --task and the budget flags
// continues the run on its journaled task and budget (its process died
// right after run-started); given flags that differ from the journal
// it refuses with exit 2, naming the flag and what the journal holds;
// given the journaled values it resumes; another manager profile, or
// another deliverable check (--expect, --check-cmd), is refused too.
func TestSuperviseResumeKeepsTheJournaledTaskAndBudget(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	base := []string{"supervise", supManager, "--worker", noteWriter, "--run-dir", dir, "--db", db}
	if out, errOut, code := run(t, "", append(base, "--task", "Write release notes.", "--run-id", "rel", "--budget-tokens", "50000", "--iterations", "5")...); code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	journaltest.KeepThrough(t, dir, supervise.KindRunStarted, 1) // died before its manager spawned anything

	out, errOut, code := run(t, "", append(base, "--resume", "--json")...)
	if code != 0 {
		t.Fatalf("--resume without --task and budget flags: exit %d\n%s%s", code, out, errOut)
	}
	if tasks := spawnedTasks(t, dir); len(tasks) != 1 || tasks[0] != "Write release notes." {
		t.Errorf("the resumed manager spawned %q; want one worker on the journaled task", tasks)
	}
	state, err := supervise.ReadRunState(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if b := state.Budget; b == nil || b.Tokens == nil || *b.Tokens != 50_000 || b.Iterations == nil || *b.Iterations != 5 {
		t.Errorf("the resumed run's budget %+v, want the journaled 50000 tokens and 5 iterations", state.Budget)
	}

	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"more tokens", "--budget-tokens 90000 differs from the run's journal, which holds 50000", []string{"--budget-tokens", "90000"}},
		{"more iterations", "--iterations 9 differs from the run's journal, which holds 5", []string{"--iterations", "9"}},
		{"a dollar cap", "--budget-usd $2 differs from the run's journal, which holds none", []string{"--budget-usd", "2"}},
		{"another task", `--task "Write a poem." differs from the run's journal, which holds "Write release notes."`, []string{"--task", "Write a poem."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, "", append(append(base, "--resume"), tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "omit") {
				t.Errorf("exit %d, want 2 with %q\n%s%s", code, tc.want, out, errOut)
			}
		})
	}
	other := writeFile(t, "manager.json", `{"name": "release-manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
  "prompt": {"systemPrompt": "Another manager."},
  "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	if out, errOut, code := run(t, "", "supervise", other, "--worker", noteWriter, "--run-dir", dir, "--db", db, "--resume"); code != 2 ||
		!strings.Contains(errOut, "MANAGER-PROFILE is not the manager profile the run started with") {
		t.Errorf("--resume with another manager profile: exit %d, want 2\n%s%s", code, out, errOut)
	}
	// The check is the run's too: the first process judged by "any
	// non-empty result" (no --expect), and its results stand judged so.
	for _, args := range [][]string{{"--expect", "Done"}, {"--check-cmd", "true"}} {
		if out, errOut, code := run(t, "", append(append(base, "--resume"), args...)...); code != 2 ||
			!strings.Contains(errOut, "--expect, --check-cmd and --check-timeout: the run started with another deliverable check") {
			t.Errorf("--resume %q: exit %d, want 2 naming the check flags\n%s%s", args, code, out, errOut)
		}
	}
	if out, errOut, code := run(t, "", append(base, "--resume", "--task", "Write release notes.", "--budget-tokens", "50000", "--iterations", "5")...); code != 0 {
		t.Errorf("--resume with the journaled values: exit %d\n%s%s", code, out, errOut)
	}
}

// The same through --journal-in-store: the run-started record is read
// from the run store, not a run dir.
func TestSuperviseStoreJournalResumeKeepsTheJournaledBudget(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	base := []string{"supervise", supManager, "--worker", noteWriter, "--run-dir", t.TempDir(), "--run-id", "rel", "--db", db, "--journal-in-store"}
	if out, errOut, code := run(t, "", append(base, "--task", "Write release notes.", "--budget-tokens", "50000")...); code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", append(base, "--resume", "--budget-tokens", "7")...); code != 2 ||
		!strings.Contains(errOut, "--budget-tokens 7 differs from the run's journal, which holds 50000") {
		t.Errorf("--resume --budget-tokens 7: exit %d, want 2\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", append(base, "--resume")...); code != 0 {
		t.Errorf("--resume without flags: exit %d\n%s%s", code, out, errOut)
	}
}

// RES-03, behaviour 46 through agentrt graph: --resume without --task
// continues on the journaled task; a graph file whose budget changed,
// or another --task or --expect, is refused with exit 2 saying what the
// journal holds.
func TestGraphResumeKeepsTheJournaledTaskAndBudget(t *testing.T) {
	graphFile := writeFile(t, "graph.json", twoNodeGraph)
	richer := writeFile(t, "richer.json", strings.Replace(twoNodeGraph, `"tokens": 5000`, `"tokens": 9000`, 1))
	dirs := writeFile(t, "directives.json", twoNodeDirectives)
	fast := writeFile(t, "fast.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "review: the patch is safe"}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	rest := []string{"--directives", dirs, "--run-dir", dir, "--db", db, "--expect", "patch", "--script", fast}
	if out, errOut, code := run(t, "", append([]string{"graph", graphFile, "--task", "Make the login test pass.", "--run-id", "login"}, rest...)...); code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	journaltest.KeepThrough(t, dir, supervise.KindRunStarted, 1)

	out, errOut, code := run(t, "", append([]string{"graph", graphFile, "--resume", "--json"}, rest...)...)
	if code != 0 || member(decode(t, out), "status").Str() != "winner" {
		t.Fatalf("--resume without --task: exit %d\n%s%s", code, out, errOut)
	}
	tasks := spawnedTasks(t, dir)
	if len(tasks) == 0 {
		t.Fatal("the resumed graph spawned nothing")
	}
	for _, task := range tasks {
		if !strings.Contains(task, "Make the login test pass.") {
			t.Errorf("a resumed spawn's task %q does not carry the journaled task", task)
		}
	}

	if out, errOut, code := run(t, "", append([]string{"graph", richer, "--resume"}, rest...)...); code != 2 ||
		!strings.Contains(errOut, "the graph's budget.tokens (at /budget/tokens) is 9000 but the run's journal holds 5000") {
		t.Errorf("--resume with a richer graph budget: exit %d, want 2\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", append([]string{"graph", graphFile, "--resume", "--task", "Break the build."}, rest...)...); code != 2 ||
		!strings.Contains(errOut, `--task "Break the build." differs from the run's journal, which holds "Make the login test pass."`) {
		t.Errorf("--resume with another --task: exit %d, want 2\n%s%s", code, out, errOut)
	}
	// Another check: --expect "test fixed" where the run judged by "patch".
	other := slices.Clone(rest)
	other[slices.Index(other, "patch")] = "test fixed"
	if out, errOut, code := run(t, "", append([]string{"graph", graphFile, "--resume"}, other...)...); code != 2 ||
		!strings.Contains(errOut, "--expect, --check-cmd and --check-timeout: the run started with another deliverable check") {
		t.Errorf("--resume with another --expect: exit %d, want 2\n%s%s", code, out, errOut)
	}
}

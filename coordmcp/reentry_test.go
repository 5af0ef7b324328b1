package coordmcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/supervise"
)

// reentryProfile is an opencode manager granted what a re-entering
// manager is told to use: spawn_worker, await_event, observe_agent.
func reentryProfile(t testing.TB) *profile.Profile {
	return parseProfile(t, `{"name": "manager", "harness": "opencode", "tools": {"agent_runtime_coordination_spawn_worker": true,
		"agent_runtime_coordination_await_event": true, "agent_runtime_coordination_observe_agent": true}}`)
}

// promptedOpencode is a harness brain on the fake opencode (clibridge
// starts this test binary as opencode) that answers at once and writes
// the prompt its turn read to the returned file.
func promptedOpencode(t *testing.T, dir string) (supervise.Brain, string) {
	t.Helper()
	promptFile := filepath.Join(dir, "prompt.txt")
	prov, err := clibridge.New(clibridge.Options{Harness: harness.OpenCode, Binary: os.Args[0], WorkRoot: filepath.Join(dir, "work"),
		Env: map[string]string{fakeModeEnv: "finish", fakePromptFileEnv: promptFile}})
	if err != nil {
		t.Fatal(err)
	}
	brain, err := coordmcp.NewHarnessBrain(reentryProfile(t), prov, coordmcp.HarnessOptions{Relay: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	return brain, promptFile
}

// keyedSpawner is a first process's manager: it spawns an alpha worker
// per key, in order, awaiting each.
func keyedSpawner(keys ...string) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i, k := range keys {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("write alpha %d", i+1), Label: "w" + k, Key: k}); err != nil {
				return supervise.BrainReport{}, err
			}
			ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
			if err != nil || ev.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, fmt.Errorf("no settlement of %s: %+v", k, ev))
			}
		}
		return supervise.BrainReport{}, nil
	})
}

func readPrompt(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the harness's turn left no prompt: %v", err)
	}
	return string(b)
}

// §3.6 resume, behaviour 40: a supervisor that died while its workers
// ran is resumed with an external-harness manager, which starts a new
// session knowing only its prompt. That prompt says it re-enters a run
// in progress and lists its workers — the settled one with its key and
// outRef, the one in doubt — the waiting event and the journal's
// position, and tells it to await and observe before spawning again.
// The same manager's first start carries no such note.
func TestHarnessManagerResumedIsToldItReentersBehaviour40(t *testing.T) {
	dir := t.TempDir()
	o := runOptions(t, dir, keyedSpawner("ka", "kb"))
	if _, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2) // ka settled, kb spawned and never settled
	rows, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var outRef string
	for _, r := range rows {
		if r.Kind == supervise.KindSettled && r.Node == "run1:s1" {
			outRef = r.OutRef
		}
	}
	if outRef == "" {
		t.Fatal("the journal holds no outRef for run1:s1")
	}

	brain, promptFile := promptedOpencode(t, t.TempDir())
	o = runOptions(t, dir, brain)
	o.Resume = true
	if _, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o); err != nil {
		t.Fatal(err)
	}
	prompt := readPrompt(t, promptFile)
	for _, want := range []string{
		"write alpha",                  // the task, unchanged
		"You are re-entering run run1", // it is a resume
		fmt.Sprintf("%d of them written before this session", len(rows)), // where the journal stands
		"run1:s1", `"ka"`, outRef, "passed its check",
		"in doubt", "run1:s2", `"kb"`,
		"Events waiting for you in await_event: 1",
		"await_event", "observe_agent", "same key",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the resumed manager's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "Workers running: run1") {
		t.Errorf("the prompt lists a live worker; none runs:\n%s", prompt)
	}

	// A first start of the same manager: no re-entry note.
	brain, promptFile = promptedOpencode(t, t.TempDir())
	if _, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", runOptions(t, t.TempDir(), brain)); err != nil {
		t.Fatal(err)
	}
	if first := readPrompt(t, promptFile); strings.Contains(first, "re-entering") || !strings.Contains(first, "You are the manager of supervised run run1") {
		t.Errorf("a first start's prompt:\n%s\nwant the manager's instructions and no re-entry note", first)
	}
}

// A resumed run of 1,000 workers gives its harness manager a bounded
// note: the most recent settled workers, how many were left out, and
// where read_journal finds the rest — not a thousand lines.
func TestHarnessManagerReentryNoteBoundedAt1000Workers(t *testing.T) {
	if testing.Short() {
		t.Skip("journals 1,000 workers")
	}
	const n = 1000
	dir := t.TempDir()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i+1)
	}
	o := runOptions(t, dir, keyedSpawner(keys...))
	o.Budget.Iterations = ptr[int64](n + 10)
	o.Budget.Tokens = ptr[int64](10_000_000)
	o.Budget.MicroUSD = nil
	o.PerWorker.MicroUSD = nil
	if _, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, n) // 999 settled, the last in doubt

	brain, promptFile := promptedOpencode(t, t.TempDir())
	o = runOptions(t, dir, brain)
	o.Budget.Iterations = ptr[int64](n + 10)
	o.Budget.Tokens = ptr[int64](10_000_000)
	o.Budget.MicroUSD = nil
	o.PerWorker.MicroUSD = nil
	o.Resume = true
	if _, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o); err != nil {
		t.Fatal(err)
	}
	prompt := readPrompt(t, promptFile)
	t.Logf("the resumed manager's prompt: %d bytes", len(prompt))
	if len(prompt) > coordmcp.MaxReentryNoteBytes+4096 {
		t.Errorf("the prompt is %d bytes; want the note within %d", len(prompt), coordmcp.MaxReentryNoteBytes)
	}
	omitted := n - 1 - supervise.MaxReentryWorkers
	for _, want := range []string{
		"You are re-entering run run1", `"k0999"`, fmt.Sprintf("%d earlier ones left out", omitted),
		"run1:s1000", `"k1000"`, "Events waiting for you in await_event: 999",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, `"k0001"`) {
		t.Errorf("the prompt lists the first worker of 999 settled; want only the last %d", supervise.MaxReentryWorkers)
	}
}

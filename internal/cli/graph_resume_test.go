package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// twoNodeGraph is driver → coder, driver → reviewer; the directives
// tell the scripted workers apart.
const twoNodeGraph = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}},
    {"id": "reviewer", "profile": {"name": "reviewer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/reviewer"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1"},
    {"kind": "delegates", "from": "driver", "to": "reviewer", "directive": "delegate/reviewer/v1"}
  ],
  "budget": {"tokens": 5000, "iterations": 6}
}`

const twoNodeDirectives = `{"delegate/coder/v1": "CODE: fix the failing test.", "delegate/reviewer/v1": "REVIEW: say what is risky."}`

// RES-03 through the CLI: agentrt graph is SIGKILLed while its reviewer
// runs, after the coder settled; agentrt graph --resume on the same run
// dir replays the coder from the journal (replayed, not run again, its
// traversal not ledgered twice), runs the reviewer again and wins.
func TestGraphResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	graphFile := writeFile(t, "graph.json", twoNodeGraph)
	dirs := writeFile(t, "directives.json", twoNodeDirectives)
	slow := writeFile(t, "slow.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "reviewing"}, {"delayMs": 600000}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
	fast := writeFile(t, "fast.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "review: the patch is safe"}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	args := []string{"graph", graphFile, "--task", "Make the login test pass.", "--directives", dirs, "--run-dir", dir, "--run-id", "login",
		"--db", db, "--expect", "patch"}

	cmd := exec.Command(os.Args[0], append(args, "--script", slow)...)
	cmd.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	coderSettled := func() bool {
		recs, _, err := supervise.ReadRunDir(context.Background(), dir)
		if err != nil {
			return false
		}
		coder, reviewerStarted, settled := supervise.NodeID(""), false, false
		for _, r := range recs {
			switch {
			case r.Kind == supervise.KindSpawned && r.Profile == "coder":
				coder = r.Node
			case r.Kind == supervise.KindSpawned && r.Profile == "reviewer":
				reviewerStarted = true
			case r.Kind == supervise.KindSettled && r.Node == coder:
				settled = true
			}
		}
		return settled && reviewerStarted
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !coderSettled() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never settled its coder; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// Without --resume the journal is refused, not overwritten: a usage
	// error (the run id needs --resume), as agentrt supervise's is.
	if _, errOut, code := run(t, "", append(args, "--script", fast)...); code != 2 || !strings.Contains(errOut, "--resume") {
		t.Errorf("without --resume: exit %d\n%s", code, errOut)
	}
	out, errOut, code := run(t, "", append(args, "--script", fast, "--resume", "--json")...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if member(res, "status").Str() != "winner" || member(member(res, "winner"), "text").Str() != "patch: test fixed" {
		t.Errorf("resumed result: %s", out)
	}
	var coderRows, reviewerRows int
	for _, row := range member(res, "ledger").Items() {
		switch member(row, "edge").Str() {
		case "delegates:driver->coder":
			coderRows++
		case "delegates:driver->reviewer":
			reviewerRows++
		}
	}
	if coderRows != 1 || reviewerRows != 2 {
		t.Errorf("ledger has %d coder and %d reviewer rows, want 1 (replayed) and 2 (killed, then again): %s", coderRows, reviewerRows, out)
	}
	var replayedCoder, reviewers int
	for _, n := range member(res, "workers").Items() {
		switch member(n, "profile").Str() {
		case "coder":
			if member(n, "replayed").Bool() {
				replayedCoder++
			}
		case "reviewer":
			reviewers++
		}
	}
	if replayedCoder != 1 || reviewers != 2 {
		t.Errorf("tree: replayed coders %d, reviewers %d; want 1, 2: %s", replayedCoder, reviewers, out)
	}
	if !strings.Contains(errOut, "resuming "+dir) {
		t.Errorf("progress does not say it resumes:\n%s", errOut)
	}
}

package cli_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// analystScript is the analysts' scripted model: one turn that calls the
// trace tool getDatasetOverview, then the findings.
const analystScript = `{"turns": [
  {"calls": [{"tool": "getDatasetOverview", "args": {}}], "usage": {"inputTokens": 12, "outputTokens": 3}},
  {"text": "FINDINGS: one trace, nothing failed.", "usage": {"inputTokens": 20, "outputTokens": 6}}]}`

// runBinary runs the built agentrt command with args, within a
// generous deadline.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildAgentrt(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// checkAnalystRanInProcess asserts that run dir dir holds one analyst
// of lens that ran as a tool loop on the analysts' model: its finding is
// the script's answer (not the workers' provider's) and it took two
// model calls, the second after its trace tool call was answered.
func checkAnalystRanInProcess(t *testing.T, dir, lens string) {
	t.Helper()
	log, _, err := supervise.ReadCoordinationLog(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var analyst supervise.NodeID
	for _, r := range log {
		if r.Kind == supervise.CoordFinding && r.Finding.Lens == lens {
			if r.Finding.Outcome != supervise.FindingSettled || r.Finding.Findings != "FINDINGS: one trace, nothing failed." {
				t.Errorf("finding %+v, want the analyst model's answer", *r.Finding)
			}
			analyst = r.Finding.Analyst
		}
	}
	if analyst == "" {
		t.Fatalf("no finding of lens %s in the coordination log: %+v", lens, log)
	}
	recs, _, err := supervise.ReadRunDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Node == analyst {
			if r.Spent == nil || r.Spent.Iterations == nil || *r.Spent.Iterations != 2 {
				t.Errorf("the analyst's spend %+v, want 2 model calls (the tool call answered, then the findings)", r.Spent)
			}
			return
		}
	}
	t.Errorf("analyst %s never settled", analyst)
}

// §9 run_analyst with --analyst-model (supervise.Options.AnalystModel),
// through the built binary: the manager runs the lens tone-check over
// its settled worker; the analyst is an in-process tool loop on the
// analysts' scripted model with the lens's singleTrace tools mounted,
// calls getDatasetOverview and answers; the note still wins.
func TestSuperviseAnalystModelBinary(t *testing.T) {
	mgr := writeFile(t, "manager.json", `{"name": "release-manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
  "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
    "agent_runtime_coordination_run_analyst": true}}`)
	lenses := writeFile(t, "analysts.json", `[{"id": "tone-check", "description": "Tone.", "area": "style", "question": "Is the tone right?",
  "instructions": "Judge the tone of the note.", "toolGroup": "singleTrace"}]`)
	runLens := `{"calls": [{"verb": "run_analyst", "args": {"kind": "tone-check", "workerId": "rel:s1"}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+runLens+`, `+awaitOne+`, `+answerDone+`]}`)
	dir := t.TempDir()
	out, errOut, code := runBinary(t, "supervise", mgr, "--task", "Write release notes.", "--worker", noteWriter, "--manager-script", script,
		"--run-dir", dir, "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db"), "--analysts", lenses,
		"--analyst-script", writeFile(t, "analyst-script.json", analystScript), "--json",
		"--budget-tokens", "400000", "--worker-tokens", "50000")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if member(member(decode(t, out), "winner"), "node").Str() != "rel:s1" {
		t.Errorf("winner: %s", out)
	}
	checkAnalystRanInProcess(t, dir, "tone-check")

	// The flag conventions are the brain's: a script needs the scripted
	// provider, a model name on scripted needs its script.
	if _, errOut, code := runBinary(t, "supervise", mgr, "--task", "t", "--worker", noteWriter, "--analyst-model", "m"); code != 2 || !strings.Contains(errOut, "--analyst-script") {
		t.Errorf("--analyst-model on scripted without a script: exit %d\n%s", code, errOut)
	}
}

// The same through agentrt graph: an analyzes edge's registry lens
// (failure-triage) runs as an in-process tool loop on --analyst-script's
// model.
func TestGraphAnalystModelBinary(t *testing.T) {
	graphFile := writeFile(t, "lens.json", `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1"},
    {"kind": "analyzes", "analyst": "failure-triage", "over": ["coder"], "to": "driver", "directive": "analyze/critic/v1"}
  ],
  "budget": {"tokens": 5000, "iterations": 6}
}`)
	dir := t.TempDir()
	out, errOut, code := runBinary(t, "graph", graphFile, "--task", "Make the login tests pass.", "--directives", directives,
		"--run-dir", dir, "--run-id", "lens", "--db", filepath.Join(t.TempDir(), "runs.db"),
		"--analyst-script", writeFile(t, "analyst-script.json", analystScript), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if member(member(decode(t, out), "winner"), "node").Str() != "lens:s1" {
		t.Errorf("winner: %s", out)
	}
	checkAnalystRanInProcess(t, dir, "failure-triage")
}

package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

const improveCases = `{"cases":[
 {"id":"t1","input":"hello one","expected":"HELLO ONE","partition":"train"},
 {"id":"s1","input":"hello two","expected":"HELLO TWO","partition":"selection"},
 {"id":"x1","input":"see you","expected":"SEE YOU","partition":"test"},
 {"id":"x2","input":"thank you","expected":"THANK YOU","partition":"test"},
 {"id":"x3","input":"well done","expected":"WELL DONE","partition":"test"}
]}`

func improveFiles(t *testing.T) (profilePath, casesPath string) {
	t.Helper()
	dir := t.TempDir()
	profilePath, casesPath = filepath.Join(dir, "profile.json"), filepath.Join(dir, "cases.json")
	putFile(t, profilePath, []byte(`{"name":"echo","prompt":{"systemPrompt":"Repeat the user's words."}}`))
	putFile(t, casesPath, []byte(improveCases))
	return profilePath, casesPath
}

// TestImproveSearchCommand: `agentrt improve PROFILE` offline ships the
// uppercase prompt (exit 0) with a human summary and progress on stderr;
// --json carries the candidate, the population and the spend; a higher
// minimum lift holds (exit 3); a second run in the same run dir reuses
// every measurement; bad input is refused with the path.
func TestImproveSearchCommand(t *testing.T) {
	profilePath, casesPath := improveFiles(t)
	runDir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--run-dir", runDir)
	if code != cli.ExitOK || !strings.Contains(out, "decision  ship") || !strings.Contains(out, "Answer in uppercase.") ||
		!strings.Contains(out, "nothing was activated") || !strings.Contains(errOut, "measuring final") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--run-dir", runDir, "--resume", "required", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Decision  string `json:"decision"`
		Candidate struct {
			Digest  string `json:"digest"`
			Profile struct {
				Prompt struct {
					SystemPrompt string `json:"systemPrompt"`
				} `json:"prompt"`
			} `json:"profile"`
		} `json:"candidate"`
		Population []json.RawMessage `json:"population"`
		Provenance struct {
			Resumed     bool `json:"resumed"`
			Reused      int  `json:"reused"`
			Evaluations int  `json:"evaluations"`
		} `json:"provenance"`
		Spend struct {
			Total struct {
				USD *float64 `json:"usd"`
			} `json:"total"`
		} `json:"spend"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Decision != "ship" || res.Candidate.Profile.Prompt.SystemPrompt != "Repeat the user's words. Answer in uppercase." ||
		len(res.Population) != 3 || !res.Provenance.Resumed || res.Provenance.Evaluations != 0 || res.Provenance.Reused == 0 ||
		res.Spend.Total.USD == nil || *res.Spend.Total.USD != 0 {
		t.Errorf("result %+v", res)
	}

	out, _, code = run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "contains", "--minimum-lift", "1")
	if code != cli.ExitHold || !strings.Contains(out, "decision  hold") || !strings.Contains(out, "does not clear") {
		t.Errorf("exit %d\n%s", code, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	putFile(t, bad, []byte(`{"cases":[{"id":"a","input":"x","partition":"dev"}]}`))
	_, errOut, code = run(t, "", "improve", profilePath, "--scenarios", bad, "--judge", "exact")
	if code != cli.ExitFailed || !strings.Contains(errOut, "/cases/0/partition") {
		t.Errorf("bad scenarios: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = run(t, "", "improve", profilePath, "--scenarios", casesPath); code != cli.ExitUsage || !strings.Contains(errOut, "judge") {
		t.Errorf("no judge: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "fuzzy"); code != cli.ExitUsage {
		t.Errorf("unknown judge: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--surface", "knowledge"); code != cli.ExitUsage || !strings.Contains(errOut, "/surface") {
		t.Errorf("bad surface: exit %d\n%s", code, errOut)
	}
	// The subcommands of the production path are still there.
	if out, _, code := run(t, "", "improve", "--help"); code != cli.ExitOK || !strings.Contains(out, "propose") || !strings.Contains(out, "--scenarios") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

const proposalInputsDoc = `{"runId": "cli-improve-1",
 "source": {"kind": "agent-profile-file", "sourceIdentity": "profile.json", "sourceRevision": 1},
 "executionRef": {"identity": "agentrt-tool-loop:scripted", "digest": "sha256:4444444444444444444444444444444444444444444444444444444444444444"},
 "grader": {"name": "exact", "version": "1", "format": "tangle-grader", "artifact": {
   "locator": {"kind": "s3", "bucket": "graders", "key": "exact.json", "region": "us-east-1"},
   "sha256": "sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", "byteLength": 11}},
 "model": {"requested": "scripted/echo", "provider": "scripted", "model": "echo", "snapshot": "offline", "reasoningEffort": "medium"},
 "limits": {"timeoutMs": 120000, "maxSteps": 10, "maxModelCalls": 10, "maxInputTokens": 100000, "maxOutputTokens": 100000, "maxCostUsd": 1}}`

// TestImproveSearchProposal: a shipping run writes the proposal, and the
// production path's propose command records it from the file as it is.
func TestImproveSearchProposal(t *testing.T) {
	profilePath, casesPath := improveFiles(t)
	dir := t.TempDir()
	inputs, out, db := filepath.Join(dir, "inputs.json"), filepath.Join(dir, "proposal.json"), filepath.Join(dir, "runs.db")
	putFile(t, inputs, []byte(proposalInputsDoc))
	stdout, errOut, code := run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact",
		"--proposal-inputs", inputs, "--proposal", out, "--db", db)
	if code != cli.ExitOK || !strings.Contains(errOut, "agentrt improve propose") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errOut)
	}
	stdout, errOut, code = run(t, "", "improve", "propose", out, "--db", db)
	if code != cli.ExitOK || !strings.Contains(stdout, "recorded") {
		t.Fatalf("propose: exit %d\n%s\n%s", code, stdout, errOut)
	}
	bad := filepath.Join(dir, "bad.json")
	putFile(t, bad, []byte(`{"runId": ""}`))
	if _, errOut, code = run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact",
		"--proposal-inputs", bad, "--proposal", out); code != cli.ExitFailed || !strings.Contains(errOut, "/runId") {
		t.Errorf("bad inputs: exit %d\n%s", code, errOut)
	}
	if _, _, code = run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--proposal", out); code != cli.ExitUsage {
		t.Errorf("--proposal alone: exit %d", code)
	}
}

// TestImproveSearchJudgeCmd: a judge command scores each case; one that
// reports no cost leaves the spend unknown, so the run holds (exit 3) even
// though the candidate wins every test case.
func TestImproveSearchJudgeCmd(t *testing.T) {
	profilePath, casesPath := improveFiles(t)
	judge := filepath.Join(t.TempDir(), "judge.sh")
	putFile(t, judge, []byte("#!/bin/sh\nif grep -q '\"output\":\"[A-Z ]*\"'; then echo '{\"score\":1}'; else echo '{\"score\":0}'; fi\n"))
	if err := os.Chmod(judge, 0o700); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge-cmd", judge)
	if code != cli.ExitHold || !strings.Contains(out, "decision  hold") || !strings.Contains(out, "spend is unknown") ||
		!strings.Contains(out, "candidate 1.0000") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

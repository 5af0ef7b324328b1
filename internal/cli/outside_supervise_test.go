package cli_test

// Outside scenarios of agentrt supervise (written from its --help and
// spec §3.6/§9 before reading the command's own tests): submit_result
// (behaviour 55), max-live-workers with freeSlots (45) and a keyed spawn
// replayed as completed (44), judged by the exit status, the --json
// result, the stderr progress lines and the run's journal.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/cli"
)

const outsideCLIManager = `{"name": "m", "harness": "cli-base", "model": {"default": "scripted/manager"},
 "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
   "agent_runtime_coordination_submit_result": true, "agent_runtime_coordination_stop": true}}`

func TestOutsideCLISupervise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		flags  []string
		exit   int
		status string
		reason string
		out    string
		// stderr lines and journal texts the run must show.
		stderr  []string
		journal []string
		workers int
	}{{
		name: "submit_result retains the first passing result",
		script: `{"turns": [{"calls": [{"verb": "submit_result", "args": {"result": "nope"}}]},
 {"calls": [{"verb": "submit_result", "args": {"result": "PASS one"}}]},
 {"calls": [{"verb": "submit_result", "args": {"result": "PASS two"}}]},
 {"calls": [{"verb": "stop", "args": {"reason": "done"}}]}]}`,
		flags:   []string{"--expect", "PASS"},
		exit:    0,
		status:  "winner",
		out:     "PASS one",
		stderr:  []string{`submitted the manager's result: delivered`, "finished winner"},
		journal: []string{`\"accepted\":false`, `\"expectation\":\"a result that contains \\\"PASS\\\"\"`, "earlier-passing-result"},
	}, {
		name: "a failing submission and stop is no winner",
		script: `{"turns": [{"calls": [{"verb": "submit_result", "args": {"result": "nope"}}]},
 {"calls": [{"verb": "stop", "args": {"reason": "done"}}]}]}`,
		flags:  []string{"--expect", "PASS"},
		exit:   1,
		status: "no-winner",
		reason: "all-children-down",
		stderr: []string{"finished no-winner all-children-down"},
	}, {
		name: "max-live 1 refuses the second live spawn; a done key replays",
		script: `{"turns": [{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "task": "a", "key": "k"}},
                      {"verb": "spawn_worker", "args": {"profile": "note-writer", "task": "b"}}]},
 {"calls": [{"verb": "await_event", "args": {"timeoutMs": 5000}}]},
 {"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "task": "a", "key": "k"}}]},
 {"text": "done"}]}`,
		flags:   []string{"--max-live", "1"},
		exit:    0,
		status:  "winner",
		stderr:  []string{"spawned ", "settled ", "finished winner"},
		journal: []string{"max-live-workers", `\"freeSlots\":0`, `\"resumed\":\"completed\"`},
		workers: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mgr := filepath.Join(dir, "manager.json")
			script := filepath.Join(dir, "script.json")
			for p, body := range map[string]string{mgr: outsideCLIManager, script: tc.script} {
				if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			runDir := filepath.Join(dir, "run")
			args := append([]string{"supervise", mgr, "--worker", filepath.Join("..", "..", "examples", "profiles", "note-writer.json"),
				"--task", "t", "--run-dir", runDir, "--db", filepath.Join(dir, "agentrt.db"), "--manager-script", script, "--json"}, tc.flags...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			code := cli.Main(ctx, args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != tc.exit {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.exit, errb.String())
			}
			var res struct {
				Status  string            `json:"status"`
				Kind    string            `json:"kind"`
				Reason  string            `json:"reason"`
				Out     string            `json:"out"`
				Workers []json.RawMessage `json:"workers"`
				Winner  *struct {
					Submitted bool `json:"submitted"`
				} `json:"winner"`
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("--json output: %v\n%s", err, out.String())
			}
			if res.Status != tc.status || res.Kind != tc.status || res.Reason != tc.reason {
				t.Errorf("status %q kind %q reason %q, want %q %q", res.Status, res.Kind, res.Reason, tc.status, tc.reason)
			}
			if tc.out != "" && (res.Out != tc.out || res.Winner == nil || !res.Winner.Submitted) {
				t.Errorf("out %q winner %+v, want the submitted %q", res.Out, res.Winner, tc.out)
			}
			if len(res.Workers) != tc.workers {
				t.Errorf("%d workers, want %d", len(res.Workers), tc.workers)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errb.String())
				}
			}
			journal, err := os.ReadFile(filepath.Join(runDir, "spawn-journal.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.journal {
				if !strings.Contains(string(journal), want) {
					t.Errorf("the journal lacks %s", want)
				}
			}
		})
	}
}

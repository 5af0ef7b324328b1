package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// questionManager is a manager profile granted the question verbs (§9
// list_questions, answer_question, ask_parent, stop) besides spawn and
// await.
const questionManager = `{
  "name": "release-manager",
  "harness": "cli-base",
  "model": { "default": "scripted/manager" },
  "prompt": { "systemPrompt": "Delegate, and decide what your workers ask." },
  "tools": {
    "agent_runtime_coordination_spawn_worker": true,
    "agent_runtime_coordination_await_event": true,
    "agent_runtime_coordination_list_questions": true,
    "agent_runtime_coordination_answer_question": true,
    "agent_runtime_coordination_ask_parent": true,
    "agent_runtime_coordination_stop": true
  }
}`

// askingWorker is a scripted worker whose turn asks its manager which
// colour (a question interaction offering two options), then paints the
// answer.
const askingWorker = `{"turns": [{"repeat": true, "steps": [
  {"text": "asking; "},
  {"interaction": {"request": {"id": "colour", "kind": "question", "title": "Which colour?", "body": "The brief names none.",
    "answerSpec": {"fields": [{"type": "select", "name": "colour", "label": "Colour", "required": true,
      "options": [{"value": "red", "label": "Red"}, {"value": "blue", "label": "Blue"}]}]}}}},
  {"text": "painted {{answer:colour.colour}} ({{outcome:colour}}) DONE"}]}]}`

// §3.6 "Questions" (options are {label, tradeoff}[]) and §3.6 "Supervisor
// run layout" (coordination-log.jsonl holds questions and decisions as
// evidence), through agentrt supervise: a worker's question with options
// is journaled with each option as {"label", "tradeoff"} — the shape
// list_questions shows, not the Go field names — and a coordination log
// whose options are in that shape, or plain labels, reads back whole.
func TestQuestionOptionsJournaledAsLabelAndTradeoff(t *testing.T) {
	dir := t.TempDir()
	profile := writeFile(t, "manager.json", questionManager)
	worker := writeFile(t, "asking.json", askingWorker)
	script := managerScript(t, `{"turns": [`+spawnNote+`,
	  {"calls": [{"verb": "await_event", "args": {"timeoutMs": 60000, "kinds": ["question"]}}]},
	  {"calls": [{"verb": "answer_question", "args": {"questionId": "q1", "answer": "Blue"}}]},
	  `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", "supervise", profile, "--task", "Paint the door.", "--worker", noteWriter, "--script", worker,
		"--manager-script", script, "--run-dir", dir, "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := member(decode(t, out), "out").Str(); got != "asking; painted blue (accepted) DONE" {
		t.Errorf("the worker's output %q: the answer did not reach it", got)
	}
	raw, err := os.ReadFile(filepath.Join(dir, supervise.CoordinationLogFile))
	if err != nil {
		t.Fatal(err)
	}
	var options []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		v := decode(t, line)
		if member(v, "kind").Str() != supervise.CoordQuestion {
			continue
		}
		for _, o := range member(member(v, "question"), "options").Items() {
			options = append(options, string(canonjson.Marshal(o)))
		}
	}
	want := []string{`{"label":"red","tradeoff":""}`, `{"label":"blue","tradeoff":""}`}
	if diff := cmp.Diff(want, options); diff != "" {
		t.Errorf("journaled options (-want +got):\n%s\nthe log:\n%s", diff, raw)
	}

	// A log in §3.6's shape, and one from before options had tradeoffs
	// (plain labels), read back whole: no question is skipped.
	other := t.TempDir()
	log := `{"kind":"question","questionId":"q1","question":{"id":"q1","from":"rel:s1","level":"worker","question":"Which colour?","reason":"r","urgency":"blocks-step","status":"open","options":[{"label":"red","tradeoff":"warm"},{"label":"blue"}]}}
{"kind":"question","questionId":"q2","question":{"id":"q2","from":"rel:s1","level":"worker","question":"Which size?","reason":"r","urgency":"blocks-run","status":"open","options":["small","large"]}}
`
	if err := os.WriteFile(filepath.Join(other, supervise.CoordinationLogFile), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := supervise.ReadCoordinationLog(t.Context(), other)
	if err != nil || skipped != 0 || len(recs) != 2 {
		t.Fatalf("ReadCoordinationLog: %d records, %d skipped, %v; want 2, 0", len(recs), skipped, err)
	}
	got := [][]supervise.QuestionOption{recs[0].Question.Options, recs[1].Question.Options}
	wantOpts := [][]supervise.QuestionOption{{{Label: "red", Tradeoff: "warm"}, {Label: "blue"}}, {{Label: "small"}, {Label: "large"}}}
	if diff := cmp.Diff(wantOpts, got); diff != "" {
		t.Errorf("options read back (-want +got):\n%s", diff)
	}
}

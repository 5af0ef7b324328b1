package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// callNames plays one turn of m on messages and returns the names of the
// tools it calls, or "text" for a turn that answers.
func callNames(t *testing.T, m contract.ChatModel, messages []contract.ChatMessage) []string {
	t.Helper()
	var got []string
	for e, err := range m.Turn(context.Background(), messages, nil) {
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		switch e.Kind {
		case contract.ChatToolCall:
			got = append(got, e.ToolCall.Name)
		case contract.ChatText:
			got = append(got, "text")
		}
	}
	return got
}

// A resumed manager is a new process: a new model, given the
// conversation the journal recorded. The scripted manager (the default
// plan and a --manager-script) must go on from that conversation, as a
// real model does, not play its script from the first turn again — that
// spawned the plan's workers a second time on every resume.
func TestScriptedManagerGoesOnFromTheRecordedConversation(t *testing.T) {
	spawn, await := supervise.ToolPrefix+supervise.VerbSpawnWorker, supervise.ToolPrefix+supervise.VerbAwaitEvent
	script := filepath.Join(t.TempDir(), "manager.json")
	if err := os.WriteFile(script, []byte(`{"turns": [
  {"calls": [{"verb": "spawn_worker", "args": {"profile": "coder", "task": "t"}}]},
  {"calls": [{"verb": "await_event", "args": {}}]},
  {"calls": [{"verb": "spawn_worker", "args": {"profile": "reviewer", "task": "t"}}]},
  {"text": "done"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	text := func(s string) *string { return &s }
	head := []contract.ChatMessage{{Role: contract.ChatSystem, Content: text("system")}, {Role: contract.ChatUser, Content: text("task")}}
	// conversation is head and the first n turns of a model: each an
	// assistant message calling name and the tool's answer.
	conversation := func(names ...string) []contract.ChatMessage {
		msgs := append([]contract.ChatMessage(nil), head...)
		for i, name := range names {
			id := string(rune('a' + i))
			msgs = append(msgs,
				contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: id, Name: name}}},
				contract.ChatMessage{Role: contract.ChatTool, ToolCallID: id, Content: text("ok")})
		}
		return msgs
	}
	tests := []struct {
		name     string
		plan     string // "" the default plan, else --manager-script
		maxLive  int
		recorded []contract.ChatMessage
		want     []string
	}{
		{"default plan, fresh", "", 0, conversation(), []string{spawn, spawn}},
		{"default plan, after its spawns", "", 0, conversation(spawn), []string{await, await}},
		{"default plan, after its awaits", "", 0, conversation(spawn, await), []string{"text"}},
		{"default plan max-live 1, after the first await", "", 1, conversation(spawn, await), []string{spawn}},
		{"default plan, idle with a worker that never settled", "", 0, append(conversation(spawn),
			contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: "a1", Name: await}, {ID: "a2", Name: await}}},
			contract.ChatMessage{Role: contract.ChatTool, ToolCallID: "a1", Content: text(`- ` + await + ` → ok: {"event":{"kind":"settled","workerId":"r:s1"}}`)},
			contract.ChatMessage{Role: contract.ChatTool, ToolCallID: "a2", Content: text(`- ` + await + ` → ok: {"idle":true}`)}), []string{"text"}},
		{"script, fresh", script, 0, conversation(), []string{spawn}},
		{"script, after its first spawn", script, 0, conversation(spawn), []string{await}},
		{"script, after the await", script, 0, conversation(spawn, await), []string{spawn}},
		{"script, after the second spawn", script, 0, conversation(spawn, await, spawn), []string{"text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := routerModel("scripted", tt.plan, "", "", &profile.Profile{}, []string{"coder", "reviewer"}, "t", tt.maxLive)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, callNames(t, m, tt.recorded)); diff != "" {
				t.Errorf("the resumed manager's next turn (-want +got):\n%s", diff)
			}
		})
	}
}

// The default plan resumed after a process died with a worker's work:
// its await finds the run idle while that worker never settled, so the
// plan spawns it again exactly as it first did, awaits it, and answers.
// A worker that settled is not spawned again.
func TestDefaultPlanRedoesWorkTheResumedRunLost(t *testing.T) {
	spawn, await := supervise.ToolPrefix+supervise.VerbSpawnWorker, supervise.ToolPrefix+supervise.VerbAwaitEvent
	m, err := routerModel("scripted", "", "", "", &profile.Profile{}, []string{"coder", "reviewer"}, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) *string { return &s }
	msgs := []contract.ChatMessage{{Role: contract.ChatSystem, Content: text("system")}, {Role: contract.ChatUser, Content: text("task")}}
	// take plays the model's next turn, adds it to msgs with the given
	// tool results (one per call), and returns its calls.
	take := func(results ...string) []contract.ToolCall {
		t.Helper()
		var calls []contract.ToolCall
		for e, err := range m.Turn(context.Background(), msgs, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind == contract.ChatToolCall {
				calls = append(calls, e.ToolCall)
			}
		}
		if len(calls) != len(results) {
			t.Fatalf("the turn made %d calls, want %d: %+v", len(calls), len(results), calls)
		}
		msgs = append(msgs, contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: calls})
		for i, c := range calls {
			msgs = append(msgs, contract.ChatMessage{Role: contract.ChatTool, ToolCallID: c.ID, Content: text("- " + c.Name + " → ok: " + results[i])})
		}
		return calls
	}
	first := take(`{"workerId":"x:s1","assignment":"ordinal:1"}`, `{"workerId":"x:s2","assignment":"ordinal:2"}`)
	take(`{"event":{"kind":"settled","workerId":"x:s1","state":"done"}}`, `{"idle":true}`)
	again := take(`{"workerId":"x:s3","assignment":"ordinal:3"}`)
	if again[0].Name != spawn || string(canonjson.Marshal(again[0].Args)) != string(canonjson.Marshal(first[1].Args)) {
		t.Errorf("the plan did not spawn the lost reviewer again as it first did: %+v, first %+v", again[0], first[1])
	}
	if awaited := take(`{"event":{"kind":"settled","workerId":"x:s3","state":"done"}}`); awaited[0].Name != await {
		t.Errorf("the plan does not await the worker it spawned again: %+v", awaited)
	}
	if diff := cmp.Diff([]string{"text"}, callNames(t, m, msgs)); diff != "" {
		t.Errorf("after the lost work was redone (-want +got):\n%s", diff)
	}
}

// A lost worker's respawn that is refused (a spent edge cap, an
// exhausted budget) is not asked again: the plan goes on with its script
// rather than spawning and awaiting forever.
func TestDefaultPlanDoesNotRetryARefusedRespawn(t *testing.T) {
	m, err := routerModel("scripted", "", "", "", &profile.Profile{}, []string{"coder"}, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	spawn, await := supervise.ToolPrefix+supervise.VerbSpawnWorker, supervise.ToolPrefix+supervise.VerbAwaitEvent
	text := func(s string) *string { return &s }
	args := `{"label":"coder","profile":"coder","task":"t"}`
	call := func(id, name, a string) contract.ChatMessage {
		c := scriptedCall(id, name, a)
		return contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{c}}
	}
	result := func(id, name, s string) contract.ChatMessage {
		return contract.ChatMessage{Role: contract.ChatTool, ToolCallID: id, Content: text("- " + name + s)}
	}
	msgs := []contract.ChatMessage{{Role: contract.ChatSystem, Content: text("system")}, {Role: contract.ChatUser, Content: text("task")},
		call("s1", spawn, args), result("s1", spawn, ` → ok: {"workerId":"x:s1"}`),
		call("a1", await, `{}`), result("a1", await, ` → ok: {"idle":true}`),
		call("r1.s1", spawn, args), result("r1.s1", spawn, ` → failed (budget-exhausted): the pool is spent`),
		call("r1.a1", await, `{}`), result("r1.a1", await, ` → ok: {"idle":true}`),
	}
	if diff := cmp.Diff([]string{"text"}, callNames(t, m, msgs)); diff != "" {
		t.Errorf("after a refused respawn (-want +got):\n%s", diff)
	}
}

func scriptedCall(id, name, args string) contract.ToolCall {
	return scripted.Call(id, name, args).ToolCall
}

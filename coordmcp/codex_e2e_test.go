package coordmcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/supervise"
)

// fakeResponses is a local OpenAI Responses API scripted as a manager
// model for codex: by the number of function results in the call it
// makes the plan's next call in codex's namespace for the server
// (mcp__agentrt), then answers.
type fakeResponses struct {
	srv  *httptest.Server
	plan [][2]string

	mu      sync.Mutex
	calls   int
	outputs []string
}

func newFakeResponses(t *testing.T, plan ...[2]string) *fakeResponses {
	f := &fakeResponses{plan: plan}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeResponses) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var req struct {
		Model string `json:"model"`
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	json.Unmarshal(body, &req)
	var outputs []string
	for _, in := range req.Input {
		if in.Type == "function_call_output" {
			outputs = append(outputs, string(in.Output))
		}
	}
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.outputs = outputs
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	id := fmt.Sprint("resp_", n)
	ev("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "model": req.Model, "status": "in_progress"}})
	if k := len(outputs); k < len(f.plan) {
		ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
			"type": "function_call", "id": fmt.Sprint("fc_", n), "call_id": fmt.Sprint("call_", n), "namespace": "mcp__" + coordmcp.MCPServerName,
			"name": supervise.ToolPrefix + f.plan[k][0], "arguments": f.plan[k][1]}})
	} else {
		msg := fmt.Sprint("msg_", n)
		ev("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{
			"type": "message", "id": msg, "role": "assistant", "content": []any{}}})
		ev("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": msg, "output_index": 0, "content_index": 0, "delta": "Delivered alpha."})
		ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
			"type": "message", "id": msg, "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Delivered alpha."}}}})
	}
	ev("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "model": req.Model, "status": "completed",
		"usage": map[string]any{"input_tokens": 20, "output_tokens": 5, "total_tokens": 25, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
}

// §3.6 (codex → an external harness drives the coordination verbs): the
// REAL codex CLI as the manager, its MCP server the relay; a local
// Responses API scripts spawn_worker, await_event and submit_result in
// codex's namespace mcp__agentrt; the submitted result wins.
func TestCodexManagerDrivesSupervise(t *testing.T) {
	bin := clitest.Codex(t)
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	f := newFakeResponses(t, spawnAlpha, awaitOne, [2]string{supervise.VerbSubmitResult, `{"result":"alpha: DONE"}`})
	prov, err := clibridge.New(clibridge.Options{Harness: harness.Codex, Binary: bin, BaseURL: f.srv.URL + "/v1", APIKey: "sk-fake-codex-coordination",
		WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	manager := parseProfile(t, `{"name": "manager", "harness": "codex", "model": {"default": "gpt-e2e-1"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
			"agent_runtime_coordination_submit_result": true}}`)
	brain := harnessBrain(t, manager, prov, relay)
	res, err := supervise.Supervise(ctx, manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.outputs) != 3 || !strings.Contains(f.outputs[0], "run1:s1") || !strings.Contains(f.outputs[2], "accepted") {
		t.Errorf("function outputs codex sent back: %q", f.outputs)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || !res.Winner.Submitted || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("status %s reason %s error %+v winner %+v; want the manager's submitted winner", res.Status, res.Reason, res.Error, res.Winner)
	}
}

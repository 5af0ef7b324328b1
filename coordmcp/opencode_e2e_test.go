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

// fakeChat is a local OpenAI-compatible chat completions API scripted as
// a manager model for opencode, which names a server's tools
// <server>_<tool>: by the number of tool messages in the call it makes
// the plan's next call, then answers.
type fakeChat struct {
	srv  *httptest.Server
	plan [][2]string

	mu      sync.Mutex
	results []string
}

func newFakeChat(t *testing.T, plan ...[2]string) *fakeChat {
	f := &fakeChat{plan: plan}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeChat) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	var results []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results = append(results, string(m.Content))
		}
	}
	f.mu.Lock()
	f.results = results
	n := len(results)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["choices"] = []any{}
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	finish := "stop"
	if n < len(f.plan) {
		finish = "tool_calls"
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprint("call_", n), "type": "function",
			"function": map[string]any{"name": coordmcp.MCPServerName + "_" + supervise.ToolPrefix + f.plan[n][0], "arguments": f.plan[n][1]}}}}, nil, nil)
	} else {
		chunk(map[string]any{"role": "assistant", "content": "Delivered alpha."}, nil, nil)
	}
	chunk(map[string]any{}, finish, nil)
	chunk(nil, nil, map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25})
	fmt.Fprint(w, "data: [DONE]\n\n")
	w.(http.Flusher).Flush()
}

// §3.6 (opencode → an external harness drives the coordination verbs):
// the REAL opencode CLI as the manager, its MCP server the relay; a
// local chat completions API scripts spawn_worker, await_event and
// submit_result as agentrt_<verb tool>; the submitted result wins.
func TestOpencodeManagerDrivesSupervise(t *testing.T) {
	bin := clitest.OpenCode(t)
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	f := newFakeChat(t, spawnAlpha, awaitOne, [2]string{supervise.VerbSubmitResult, `{"result":"alpha: DONE"}`})
	prov, err := clibridge.New(clibridge.Options{Harness: harness.OpenCode, Binary: bin, BaseURL: f.srv.URL + "/v1", APIKey: "sk-fake-opencode-coordination",
		Model: "fake-oc-1", WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	manager := parseProfile(t, `{"name": "manager", "harness": "opencode",
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
			"agent_runtime_coordination_submit_result": true}}`)
	brain := harnessBrain(t, manager, prov, relay)
	res, err := supervise.Supervise(ctx, manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.results) != 3 || !strings.Contains(f.results[0], "run1:s1") || !strings.Contains(f.results[2], "accepted") {
		t.Errorf("tool results opencode sent back: %q", f.results)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || !res.Winner.Submitted || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("status %s reason %s error %+v winner %+v; want the manager's submitted winner", res.Status, res.Reason, res.Error, res.Winner)
	}
}

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentrt/agentrt/internal/clitest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedClaudeAPI is a local Anthropic Messages API for claude-code as
// both manager and worker: a call offering the coordination tools is the
// manager's (spawn_worker, await_event, submit_result, then an answer by
// the number of tool results it carries); any other is the worker's,
// answered "alpha: DONE".
func scriptedClaudeAPI(t *testing.T) (url string, calls func() (manager, worker int)) {
	const prefix = "mcp__agentrt__agent_runtime_coordination_"
	var mu sync.Mutex
	var mgr, wrk int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			return
		}
		var req struct {
			Model string `json:"model"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(body, &req)
		manager := false
		for _, tl := range req.Tools {
			manager = manager || strings.HasPrefix(tl.Name, prefix)
		}
		results := strings.Count(string(body), `"type":"tool_result"`)
		mu.Lock()
		if manager {
			mgr++
		} else {
			wrk++
		}
		n := mgr + wrk
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name string, data any) {
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			w.(http.Flusher).Flush()
		}
		ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprint("msg_", n), "type": "message",
			"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 20, "output_tokens": 1}}})
		tool, input, text := "", "", "alpha: DONE"
		if manager {
			switch results {
			case 0:
				tool, input = "spawn_worker", `{"profile":"writer","task":"write alpha"}`
			case 1:
				tool, input = "await_event", `{"timeoutMs":60000}`
			case 2:
				tool, input = "submit_result", `{"result":"alpha: DONE"}`
			default:
				text = "Delivered alpha."
			}
		}
		stop := "end_turn"
		if tool != "" {
			stop = "tool_use"
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
				"type": "tool_use", "id": fmt.Sprint("toolu_", n), "name": prefix + tool, "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
		} else {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
		ev("message_stop", map[string]any{"type": "message_stop"})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() (int, int) { mu.Lock(); defer mu.Unlock(); return mgr, wrk }
}

// agentrt supervise --provider claude-code: the built agentrt runs a
// claude-code manager (the real CLI, its model a local scripted
// endpoint) whose MCP server is this same agentrt's `mcp coordination
// RUN-DIR` relay; it spawns a claude-code worker, awaits it and submits
// its result: exit 0 with the submitted winner, the run dir's endpoint
// gone.
func TestSuperviseClaudeCodeManager(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	url, calls := scriptedClaudeAPI(t)
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	manager := write("manager.json", `{"name": "manager", "harness": "claude-code", "model": {"default": "claude-e2e-1"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
			"agent_runtime_coordination_submit_result": true}}`)
	worker := write("writer.json", `{"name": "writer", "harness": "claude-code", "model": {"default": "claude-e2e-1"}}`)
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "claude-code",
		"--base-url", url, "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-fake-cli-key", "PATH="+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentrt supervise: %v\nstdout %s\nstderr %s", err, out, stderr.String())
	}
	res := decode(t, string(out))
	if s := member(res, "status"); s.Str() != "winner" {
		t.Errorf("status %v, want winner:\n%s", s, out)
	}
	if mgr, wrk := calls(); mgr != 4 || wrk != 1 {
		t.Errorf("model calls: manager %d worker %d, want 4 and 1", mgr, wrk)
	}
	if _, err := os.Stat(filepath.Join(runDir, "coordination-endpoint.json")); !os.IsNotExist(err) {
		t.Errorf("the endpoint file outlived the run: %v", err)
	}
	if strings.Contains(stderr.String(), "sk-ant-fake-cli-key") {
		t.Error("the API key reached stderr")
	}
}

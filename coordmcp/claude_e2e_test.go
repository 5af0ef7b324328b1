package coordmcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/supervise"
)

// fakeAnthropic is a local Anthropic Messages API scripted as a manager
// model: with no tool result yet in the conversation it calls
// spawn_worker, then await_event, then submit_result, then answers.
type fakeAnthropic struct {
	srv    *httptest.Server
	runDir string
	// plan is the manager's tool calls, [verb, input JSON], one per model
	// call; after them it answers.
	plan [][2]string

	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	results  []string // the tool results the model was sent, in order
	offered  []string // the tools offered in the first call
	tokenSaw string   // the run's token, read from the run dir while live
}

// The manager's scripted calls.
var (
	spawnAlpha = [2]string{supervise.VerbSpawnWorker, `{"profile":"writer","task":"write alpha"}`}
	awaitOne   = [2]string{supervise.VerbAwaitEvent, `{"timeoutMs":60000}`}
)

const managerTool = "mcp__" + coordmcp.MCPServerName + "__" + supervise.ToolPrefix

func newFakeAnthropic(t *testing.T, runDir string, plan ...[2]string) *fakeAnthropic {
	f := &fakeAnthropic{runDir: runDir, plan: plan}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if r.Method == http.MethodHead {
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var req struct {
		Model string `json:"model"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var results []string
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results = append(results, string(b.Content))
			}
		}
	}
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.results = results
	if n == 0 {
		for _, tl := range req.Tools {
			f.offered = append(f.offered, tl.Name)
		}
		if ep, err := coordmcp.ReadEndpoint(f.runDir); err == nil {
			f.tokenSaw = ep.Token
		}
	}
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
	var tool, input string
	if len(results) < len(f.plan) {
		tool, input = f.plan[len(results)][0], f.plan[len(results)][1]
	}
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": managerTool + tool, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": input}})
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Delivered alpha."}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// §3.6 (claude-code → an external harness drives the coordination
// verbs), OS-04: the REAL claude-code CLI, as the manager of a
// supervised run (HarnessBrain through providers/clibridge), is given
// the relay (agentrt mcp coordination RUN-DIR) as its MCP server "agentrt";
// a local Anthropic endpoint scripts its model to call spawn_worker,
// await_event and submit_result. The scripted worker settles and is
// delivered, the manager's submission is the winner, the manager's
// model usage is the run's driver inference, and the run's token
// reaches neither the model endpoint nor the manager's receipt.
func TestClaudeCodeManagerDrivesSupervise(t *testing.T) {
	bin := clitest.Claude(t)
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	f := newFakeAnthropic(t, runDir, spawnAlpha, awaitOne, [2]string{supervise.VerbSubmitResult, `{"result":"alpha: DONE"}`})
	prov, err := clibridge.New(clibridge.Options{Binary: bin, BaseURL: f.srv.URL, APIKey: "sk-ant-fake-coordination-key", WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	manager := parseProfile(t, `{"name": "manager", "harness": "claude-code", "model": {"default": "claude-e2e-1"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
			"agent_runtime_coordination_submit_result": true}}`)
	brain, err := coordmcp.NewHarnessBrain(manager, prov, coordmcp.HarnessOptions{Relay: []string{relay, "mcp", "coordination"},
		SubmitGrace: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := supervise.Supervise(ctx, manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the claude-managed run took %v", time.Since(start))

	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.offered, managerTool+supervise.VerbSpawnWorker) || slices.Contains(f.offered, managerTool+supervise.VerbStop) {
		t.Errorf("tools offered to the manager's model %v: want the granted verbs of server %q only", f.offered, coordmcp.MCPServerName)
	}
	if len(f.bodies) != 4 {
		t.Errorf("%d model calls, want 4 (spawn, await, submit, answer); results %q", len(f.bodies), f.results)
	}
	if len(f.results) != 3 || !strings.Contains(f.results[0], "run1:s1") || !strings.Contains(f.results[1], "alpha: DONE") ||
		!strings.Contains(f.results[2], `\"accepted\":true`) && !strings.Contains(f.results[2], `"accepted":true`) {
		t.Errorf("tool results the model saw: %q", f.results)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || !res.Winner.Submitted || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("status %s reason %s error %+v winner %+v; want the manager's submitted winner", res.Status, res.Reason, res.Error, res.Winner)
	}
	if len(res.Tree) != 1 || !res.Tree[0].Delivered || res.Tree[0].State != supervise.StateDone {
		t.Errorf("tree %+v, want one delivered worker", res.Tree)
	}
	if d := res.Breakdown.DriverInference; !d.TokensKnown || d.Tokens != 4*(20+5) {
		t.Errorf("driver inference %+v, want the manager's 4 calls of 25 tokens", d)
	}
	if res.BrainText != "Delivered alpha." {
		t.Errorf("brain text %q", res.BrainText)
	}
	if f.tokenSaw == "" {
		t.Fatal("the endpoint file was not there while the manager ran")
	}
	for i, b := range f.bodies {
		if strings.Contains(string(b), f.tokenSaw) || strings.Contains(fmt.Sprint(f.headers[i]), f.tokenSaw) {
			t.Errorf("model call %d carries the run's token", i)
		}
	}
	if _, err := os.Stat(runDir + "/" + coordmcp.EndpointFile); !os.IsNotExist(err) {
		t.Errorf("the endpoint file outlived the run: %v", err)
	}
}

// §3.6 stop: a real claude-code manager that spawns, awaits a delivered
// worker and calls stop ends the run at once — supervise cancels its
// turn (the harness's process group is killed, which is not a driver
// failure) — and the delivered worker is the winner.
func TestClaudeCodeManagerStops(t *testing.T) {
	bin := clitest.Claude(t)
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	f := newFakeAnthropic(t, runDir, spawnAlpha, awaitOne, [2]string{supervise.VerbStop, `{"reason":"alpha is delivered"}`})
	prov, err := clibridge.New(clibridge.Options{Binary: bin, BaseURL: f.srv.URL, APIKey: "sk-ant-fake-coordination-key", WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	manager := parseProfile(t, `{"name": "manager", "harness": "claude-code", "model": {"default": "claude-e2e-1"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
			"agent_runtime_coordination_stop": true}}`)
	brain := harnessBrain(t, manager, prov, relay)
	res, err := supervise.Supervise(ctx, manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != "run1:s1" || res.Winner.Submitted {
		t.Fatalf("status %s reason %s error %+v winner %+v; want the delivered worker run1:s1", res.Status, res.Reason, res.Error, res.Winner)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) < 3 {
		t.Errorf("%d model calls, want at least 3 (spawn, await, stop)", len(f.bodies))
	}
}

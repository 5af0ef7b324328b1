package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// anthropicCostEndpoint is a local Anthropic Messages API for a
// supervised run on --provider anthropic: a request offering the
// coordination tools is the manager's, any other a worker's. The manager
// spawns every worker of plan in its first turn, awaits one event per
// later turn until every worker settled, then answers; a worker answers
// "<label>: DONE". Every answer reports usage the way the API does:
// message_start carries input_tokens (the part after the last cache
// breakpoint), cache_read_input_tokens and cache_creation_input_tokens,
// message_delta the cumulative output_tokens. The endpoint sums what a
// turn costs in tokens: all three input counts and the output.
type anthropicCostEndpoint struct {
	*httptest.Server
	plan []string

	mu                sync.Mutex
	managerTokens     int64
	workerTokens      map[string]int64
	workerIn, workOut map[string]int64
}

// The usage every answer reports.
const (
	antInput, antCacheRead, antCacheWrite, antOutput = 30, 100, 20, 7
	antTurn                                          = antInput + antCacheRead + antCacheWrite + antOutput
)

func newAnthropicCostEndpoint(t *testing.T, plan ...string) *anthropicCostEndpoint {
	t.Helper()
	e := &anthropicCostEndpoint{plan: plan, workerTokens: map[string]int64{}, workerIn: map[string]int64{}, workOut: map[string]int64{}}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *anthropicCostEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if !strings.HasSuffix(r.URL.Path, "/messages") {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not messages"}}`, http.StatusNotFound)
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
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	manager := false
	for _, tl := range req.Tools {
		manager = manager || strings.HasPrefix(tl.Name, coordinationPrefix)
	}
	results, worker := 0, ""
	for _, m := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		var text string
		if json.Unmarshal(m.Content, &blocks) != nil {
			_ = json.Unmarshal(m.Content, &text)
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results++
			}
			text += b.Text
		}
		if m.Role == "user" && !manager {
			worker = planLabel(e.plan, text, worker)
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": antInput,
			"cache_read_input_tokens": antCacheRead, "cache_creation_input_tokens": antCacheWrite, "output_tokens": 1}}})
	text := func(i int, s string) {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": s}})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	tool := func(i int, name string, input any) {
		in, _ := json.Marshal(input)
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", results, i), "name": name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	stop := "end_turn"
	switch {
	case !manager:
		text(0, worker+": DONE")
	case results == 0:
		for i, label := range e.plan {
			tool(i, "agent_runtime_coordination_spawn_worker", map[string]string{"profile": "writer", "label": label, "task": "task " + label})
		}
		stop = "tool_use"
	case results < 2*len(e.plan):
		tool(0, "agent_runtime_coordination_await_event", map[string]int{"timeoutMs": 60000})
		stop = "tool_use"
	default:
		text(0, "Every worker settled.")
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": antOutput}})
	event("message_stop", map[string]any{"type": "message_stop"})
	e.mu.Lock()
	if manager {
		e.managerTokens += antTurn
	} else {
		e.workerTokens[worker] += antTurn
	}
	e.mu.Unlock()
}

// Spec §2.1, §3.6, §7 rule 1 over the Anthropic Messages API: the
// manager and two workers on a real HTTP endpoint whose every answer
// reports cache reads and writes beside input_tokens. A turn's tokens
// are all of its prompt (input plus cache read plus cache write) and its
// output, each counted once: spentTotal, the manager's share, each
// worker's node in the tree, and each worker's kernel run in the store
// (agentrt runs show) say the same number. No dollars are reported:
// usd is null and usdKnown false, never 0.
func TestSuperviseAnthropicCacheTokensReconcile(t *testing.T) {
	e := newAnthropicCostEndpoint(t, "alpha", "beta")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-api03-test-supervise-c4")
	mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "claude-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "claude-writer"}}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "supervise", mgr, "--worker", wrk, "--task", "write the notes", "--provider", "anthropic",
		"--base-url", e.URL, "--expect", "DONE", "--run-id", "ant", "--workspace", t.TempDir(), "--db", db,
		"--budget-tokens", "5000", "--worker-tokens", "1000", "--iterations", "4", "--json")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, errOut)
	}
	res := decode(t, out)
	e.mu.Lock()
	mgrTokens, workers := e.managerTokens, e.workerTokens
	e.mu.Unlock()
	if len(workers) != 2 || workers["alpha"] != antTurn || workers["beta"] != antTurn {
		t.Fatalf("worker turns %v, want alpha and beta one turn each", workers)
	}
	want := mgrTokens + 2*antTurn
	total := member(res, "spentTotal")
	if got := member(member(total, "tokens"), "total"); got.Kind() != canonjson.Number || int64(got.Float()) != want {
		t.Errorf("spentTotal.tokens.total %v, want %d (manager %d + 2 workers × %d):\n%s", got, want, mgrTokens, antTurn, out)
	}
	if got := member(total, "tokensKnown"); !got.Bool() {
		t.Errorf("spentTotal.tokensKnown %v, want true", got)
	}
	if got := member(total, "usd"); got.Kind() != canonjson.Null || member(total, "usdKnown").Bool() {
		t.Errorf("spentTotal usd %v usdKnown %v, want null and false (no dollars reported)", got, member(total, "usdKnown"))
	}
	driver := member(member(res, "spentBreakdown"), "driverInference")
	if got := member(member(driver, "tokens"), "total"); int64(got.Float()) != mgrTokens {
		t.Errorf("driverInference tokens %v, want %d", got, mgrTokens)
	}
	for _, n := range member(member(res, "tree"), "nodes").Items() {
		if got := member(member(member(n, "spent"), "tokens"), "total"); got.Kind() != canonjson.Number || int64(got.Float()) != antTurn {
			t.Errorf("tree node %s spent tokens %v, want %d", member(n, "id").Str(), got, antTurn)
		}
	}
	shown, showErr, code := run(t, "", "runs", "show", "ant", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("runs show ant: exit %d\n%s%s", code, shown, showErr)
	}
	recWorkers := member(member(decode(t, shown), "record"), "workers").Items()
	if len(recWorkers) != 2 {
		t.Fatalf("%d recorded workers, want 2: %s", len(recWorkers), shown)
	}
	for _, w := range recWorkers {
		execution := member(w, "execution").Str()
		wout, werr, code := run(t, "", "runs", "show", execution, "--db", db, "--json")
		if code != 0 {
			t.Fatalf("runs show %s: exit %d\n%s%s", execution, code, wout, werr)
		}
		spend := member(decode(t, wout), "spend")
		in, o := member(spend, "inputTokens"), member(spend, "outputTokens")
		if in.Kind() != canonjson.Number || o.Kind() != canonjson.Number || int64(in.Float()) != antInput+antCacheRead+antCacheWrite || int64(o.Float()) != antOutput {
			t.Errorf("worker %s's run %s ledgers %s; want input %d (with the cache's) and output %d",
				member(w, "id").Str(), execution, canonjson.Marshal(spend), antInput+antCacheRead+antCacheWrite, antOutput)
		}
		if cr := member(spend, "cacheReadTokens"); cr.Kind() != canonjson.Number || int64(cr.Float()) != antCacheRead {
			t.Errorf("worker %s's run ledgers cache reads %v, want %d: %s", member(w, "id").Str(), cr, antCacheRead, canonjson.Marshal(spend))
		}
		if usd := member(spend, "costUsd"); usd.Kind() != canonjson.Null {
			t.Errorf("worker %s's run ledgers dollars %v nobody reported", member(w, "id").Str(), usd)
		}
	}
}

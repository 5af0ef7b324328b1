package clibridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// mcpHTTPServer is a minimal streamable-HTTP MCP server for the
// end-to-end tests: JSON-RPC 2.0 requests POSTed to /mcp answered with
// application/json, notifications with 202, anything else 405. Its one
// tool, probe_echo, returns "probe-echo:" + its text argument. It logs
// every method and the headers of every POST.
type mcpHTTPServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	methods []string
	headers []http.Header
}

func newMCPHTTPServer(t *testing.T) *mcpHTTPServer {
	m := &mcpHTTPServer{}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the server's MCP endpoint.
func (m *mcpHTTPServer) URL() string { return m.srv.URL + "/mcp" }

// log returns the methods received and the headers of each POST.
func (m *mcpHTTPServer) log() ([]string, []http.Header) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.methods...), append([]http.Header(nil), m.headers...)
}

func (m *mcpHTTPServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/mcp" {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.methods = append(m.methods, req.Method)
	m.headers = append(m.headers, r.Header.Clone())
	m.mu.Unlock()
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		resp["result"] = map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "mcphttpprobe", "version": "1.0.0"}}
	case "ping":
		resp["result"] = map[string]any{}
	case "tools/list":
		resp["result"] = map[string]any{"tools": []any{map[string]any{"name": "probe_echo", "description": "Echoes its text argument.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}}}}}
	case "tools/call":
		var p struct {
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		json.Unmarshal(req.Params, &p)
		resp["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "probe-echo:" + p.Arguments.Text}}, "isError": false}
	default:
		resp["error"] = map[string]any{"code": -32601, "message": "method not found"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// mcpHeaderValue is the public header the remote server's profile sets;
// it must reach the server and no event or receipt.
const mcpHeaderValue = "probe-header-5e2a91"

// A remote (streamable HTTP) MCP server reaches the real codex
// ([mcp_servers.web] url and http_headers) and opencode ("mcp": {"web":
// {"type": "remote", ...}}): the model call offers its tool, the model's
// call of it reaches the server with the profile's header, and the next
// model call carries its output; the receipt records the server, and the
// header value reaches no event or receipt.
func TestRemoteMCPServer(t *testing.T) {
	for _, c := range []struct {
		name      string
		api       fakeAPI
		newP      func(testing.TB, *fakeServer) *Provider
		tool, ns  string // as the model calls it
		eventTool string // the tool part's name
	}{
		{"codex", openAIAPI{}, newCodexProvider, "probe_echo", "mcp__web", "mcp__web__probe_echo"},
		{"opencode", chatCompletionsAPI{}, newOpencodeProvider, "web_probe_echo", "", "web_probe_echo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mh := newMCPHTTPServer(t)
			f := newFakeServer(t, c.api, mcpScript(c.tool, c.ns, "ping-remote"))
			pr := &profile.Profile{
				Model: &profile.ModelHints{Default: profile.Ptr("gpt-e2e-1")},
				MCP: map[string]profile.MCPServer{"web": {URL: profile.Ptr(mh.URL()), Transport: profile.Ptr("http"),
					Headers: map[string]profile.ConfigValue{"X-Probe": pubValue(mcpHeaderValue)}}},
			}
			env := newTestEnv(t, c.newP(t, f), pr)
			start := time.Now()
			evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("use the probe")})
			t.Logf("the turn took %v", time.Since(start))
			if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
				t.Fatalf("terminal %q (events %v)", kind, eventTypes(evs))
			}
			msgs := f.messages()
			if len(msgs) != 2 {
				t.Fatalf("%d model calls, want 2", len(msgs))
			}
			if !strings.Contains(string(msgs[1].Body), "probe-echo:ping-remote") {
				t.Error("the next model call does not carry the remote tool's output")
			}
			methods, headers := mh.log()
			if !slices.Contains(methods, "tools/list") || !slices.Contains(methods, "tools/call") {
				t.Errorf("the remote server received %v", methods)
			}
			for i, h := range headers {
				if h.Get("X-Probe") != mcpHeaderValue {
					t.Errorf("request %d (%s) to the remote server lacks the profile's header", i, methods[i])
				}
			}
			var outputs []string
			for _, ev := range evs {
				if ev.Normalized != nil && ev.Normalized.MessagePartUpdated != nil {
					if part := ev.Normalized.MessagePartUpdated.Part; part.IsTool() && *part.Tool == c.eventTool && part.State.Status == contract.ToolStatusCompleted {
						outputs = append(outputs, part.State.Output.Str())
					}
				}
			}
			if !hasText(outputs, "probe-echo:ping-remote") {
				t.Errorf("no completed %s tool part with the output (outputs %q)", c.eventTool, outputs)
			}
			recs := env.(*Environment).Turns()
			if got := recs[0].Receipt.Applied.MCPServers; !slices.Equal(got, []string{"web"}) {
				t.Errorf("receipt mcp servers %v", got)
			}
			checkNoSecrets(t, f, evs, recs)
			v, _ := canonjson.ToValue(map[string]any{"events": evs, "turns": recs})
			if all, _ := canonjson.Canonical(v); strings.Contains(string(all), mcpHeaderValue) {
				t.Error("the remote server's header value leaked into an event or receipt")
			}
		})
	}
}

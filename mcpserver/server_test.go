package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/memory"
)

var alice = workspace.ActiveTurn{Tenant: "acme", Member: "alice"}

// clock is a fixed clock, so that timestamps in results (deletedAt)
// agree between two stores.
func clock() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }

// deadline bounds one test's waits.
func deadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// transports are the two ways a client reaches a server in these tests:
// the stdio transport over pipes and a real streamable HTTP server on
// loopback.
var transports = []string{"pipe", "http"}

// connect serves srv over kind and returns a connected client session.
func connect(t *testing.T, ctx context.Context, srv *mcp.Server, kind string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	var ct mcp.Transport
	switch kind {
	case "pipe":
		// The stdio transport over pipes, as a harness runs the server.
		toServer, fromClient := io.Pipe()
		toClient, fromServer := io.Pipe()
		ss, err := srv.Connect(ctx, mcpserver.Stdio(toServer, fromServer), nil)
		if err != nil {
			t.Fatalf("server connect: %v", err)
		}
		t.Cleanup(func() { ss.Close(); fromServer.Close() })
		ct = &mcp.IOTransport{Reader: toClient, Writer: fromClient}
	case "http":
		const token = "s3cret-token"
		hs := httptest.NewServer(mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Token: token}))
		t.Cleanup(hs.Close)
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient(token), DisableStandaloneSSE: true}
	default:
		t.Fatalf("unknown transport %q", kind)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect over %s: %v", kind, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}, Timeout: 30 * time.Second}
}

// step is one tool call of a scenario.
type step struct {
	tool string
	args string
	ok   bool // whether the call succeeds
}

// scenario exercises every workspace tool, successes and refusals.
var scenario = []step{
	{workspace.ToolRemember, `{"scope":"member","key":"tea","content":"alice likes green tea","ifRevision":null}`, true},
	{workspace.ToolRemember, `{"scope":"workspace","key":"deploys","content":"deploy on tuesdays","ifRevision":null}`, true},
	{workspace.ToolRecall, `{}`, true},
	{workspace.ToolRecall, `{"query":"TEA"}`, true},
	{workspace.ToolRecall, `{"scope":"member","key":"tea"}`, true},
	{workspace.ToolRemember, `{"scope":"member","key":"tea","content":"stale","ifRevision":null}`, false}, // conflict
	{workspace.ToolRemember, `{"scope":"member","key":"tea","content":"alice likes oolong","ifRevision":1}`, true},
	{workspace.ToolForget, `{"scope":"member","key":"tea","ifRevision":2}`, true},
	{workspace.ToolForget, `{"scope":"member","key":"tea","ifRevision":2}`, false}, // gone
	{workspace.ToolFilesWrite, `{"path":"/files/notes/plan.md","content":"# Plan\nship it","ifRevision":null}`, true},
	{workspace.ToolFilesWrite, `{"path":"/files/blob.bin","content":"AAEC/w==","encoding":"base64","ifRevision":null}`, true},
	{workspace.ToolFilesWrite, `{"path":"/knowledge/specs/a.md","content":"plan the spec","ifRevision":null}`, true},
	{workspace.ToolFilesList, `{}`, true},
	{workspace.ToolFilesList, `{"prefix":"/files/notes"}`, true},
	{workspace.ToolFilesRead, `{"path":"/files/blob.bin"}`, true},
	{workspace.ToolFilesRead, `{"path":"/files/notes/plan.md","encoding":"base64"}`, true},
	{workspace.ToolFilesSearch, `{"query":"plan"}`, true},
	{workspace.ToolFilesDelete, `{"path":"/files/notes/plan.md","ifRevision":1}`, true},
	{workspace.ToolFilesRead, `{"path":"/files/notes/plan.md"}`, false},                         // not found
	{workspace.ToolFilesWrite, `{"path":"/etc/passwd","content":"x","ifRevision":null}`, false}, // outside the roots
	{workspace.ToolFilesRead, `{"path":"/files/../memories/x"}`, false},                         // traversal
	{workspace.ToolRecall, `{"unknown":1}`, false},                                              // unknown argument
	{workspace.ToolRemember, `{"scope":"member","key":"x","content":"x"}`, false},               // ifRevision missing
}

// outcome is a call's result reduced to what both sides can be compared
// on: the JSON output of a success, or the failure message.
type outcome struct {
	OK     bool
	Output any
	Code   string
	Reason string
}

// inProcess runs the scenario on the in-process tools themselves.
func inProcess(t *testing.T, ctx context.Context, st workspace.Store) []outcome {
	t.Helper()
	byName := map[string]contract.Tool{}
	for _, tool := range mcpserver.WorkspaceTools(st, nil, nil) {
		byName[tool.Name] = tool
	}
	ctx = workspace.WithActiveTurn(ctx, alice)
	var out []outcome
	for _, s := range scenario {
		args, err := canonjson.Decode([]byte(s.args))
		if err != nil {
			t.Fatal(err)
		}
		v, err := byName[s.tool].Run(ctx, args)
		if err != nil {
			out = append(out, outcome{Reason: err.Error()})
			continue
		}
		var x any
		if err := json.Unmarshal(canonjson.Marshal(v), &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, outcome{OK: true, Output: x})
	}
	return out
}

// overMCP runs the scenario through a client session.
func overMCP(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []outcome {
	t.Helper()
	var out []outcome
	for _, s := range scenario {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: json.RawMessage(s.args)})
		if err != nil {
			t.Fatalf("%s %s: protocol error %v; a refusal must be a tool result", s.tool, s.args, err)
		}
		out = append(out, outcomeOf(t, res))
	}
	return out
}

func outcomeOf(t *testing.T, res *mcp.CallToolResult) outcome {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1", len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	if res.IsError {
		var o mcpserver.Outcome
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("structuredContent of a failure: %v", err)
		}
		if o.Reason != text.Text {
			t.Errorf("failure text %q differs from structured reason %q", text.Text, o.Reason)
		}
		return outcome{Code: o.Error, Reason: o.Reason}
	}
	var fromText any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		t.Fatalf("text of a success is not JSON: %v", err)
	}
	if diff := cmp.Diff(fromText, res.StructuredContent); diff != "" {
		t.Errorf("text and structuredContent differ (-text +structured):\n%s", diff)
	}
	return outcome{OK: true, Output: res.StructuredContent}
}

// TestWorkspaceToolsEqualInProcess: WST-09 — the same tool set served over
// MCP (both transports) and called in-process gives equal results, and
// leaves equal stores.
func TestWorkspaceToolsEqualInProcess(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			ctx := deadline(t)
			local, served := memory.New(clock), memory.New(clock)
			want := inProcess(t, ctx, local)

			srv, err := mcpserver.NewWorkspace(served, mcpserver.WorkspaceOptions{Turn: alice})
			if err != nil {
				t.Fatal(err)
			}
			got := overMCP(t, ctx, connect(t, ctx, srv, kind))

			if len(got) != len(want) {
				t.Fatalf("%d outcomes, want %d", len(got), len(want))
			}
			for i, s := range scenario {
				w, g := want[i], got[i]
				if w.OK != s.ok {
					t.Errorf("%s %s: in-process ok %v, the scenario says %v (%s)", s.tool, s.args, w.OK, s.ok, w.Reason)
				}
				switch {
				case w.OK != g.OK:
					t.Errorf("%s %s: ok over MCP %v, in-process %v (%s / %s)", s.tool, s.args, g.OK, w.OK, g.Reason, w.Reason)
				case w.OK:
					if diff := cmp.Diff(w.Output, g.Output); diff != "" {
						t.Errorf("%s %s: output differs (-in-process +MCP):\n%s", s.tool, s.args, diff)
					}
				case g.Code == kernel.CodeInvalidArguments && strings.Contains(s.args, "unknown"):
					// The server checks the InputSchema first, as the
					// tool loop does; its message names the same member.
					if !strings.Contains(g.Reason, "unknown") {
						t.Errorf("%s %s: reason %q does not name the unknown member", s.tool, s.args, g.Reason)
					}
				case g.Code == kernel.CodeInvalidArguments:
					// Refused by the schema check before the tool ran.
				default:
					if g.Reason != w.Reason {
						t.Errorf("%s %s: reason over MCP %q, in-process %q", s.tool, s.args, g.Reason, w.Reason)
					}
				}
			}
			for _, prefix := range []string{"/"} {
				lw, err := local.List(ctx, alice.Tenant, prefix)
				if err != nil {
					t.Fatal(err)
				}
				lg, err := served.List(ctx, alice.Tenant, prefix)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(lw, lg); diff != "" {
					t.Errorf("stores differ (-in-process +MCP):\n%s", diff)
				}
				tw, _ := local.Tombstones(ctx, alice.Tenant, prefix)
				tg, _ := served.Tombstones(ctx, alice.Tenant, prefix)
				if diff := cmp.Diff(tw, tg); diff != "" {
					t.Errorf("tombstones differ (-in-process +MCP):\n%s", diff)
				}
			}
		})
	}
}

// TestRefusalCodes: refusals are tool results with the tool loop's codes.
func TestRefusalCodes(t *testing.T) {
	ctx := deadline(t)
	st := memory.New(clock)
	srv, err := mcpserver.NewWorkspace(st, mcpserver.WorkspaceOptions{Turn: alice})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, srv, "pipe")
	call := func(tool, args string) outcome {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return outcomeOf(t, res)
	}
	call(workspace.ToolFilesWrite, `{"path":"/files/a","content":"1","ifRevision":null}`)
	tests := []struct {
		name, tool, args, code, reason string
	}{
		{"conflict", workspace.ToolFilesWrite, `{"path":"/files/a","content":"2","ifRevision":null}`, kernel.CodeToolError, "expected absent, found revision 1"},
		{"unknown argument", workspace.ToolFilesList, `{"bogus":true}`, kernel.CodeInvalidArguments, "bogus"},
		{"wrong type", workspace.ToolFilesRead, `{"path":7}`, kernel.CodeInvalidArguments, "/path"},
		{"not an object", workspace.ToolFilesList, `[1]`, kernel.CodeInvalidArguments, ""},
		{"bad path", workspace.ToolFilesRead, `{"path":"/secrets/x"}`, kernel.CodeToolError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(tt.tool, tt.args)
			if got.OK || got.Code != tt.code || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("got %+v, want code %s with %q", got, tt.code, tt.reason)
			}
		})
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files.nope", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown tool is a protocol error, got a result")
	}
}

// TestForgedIdentityIgnored: WST-10 over MCP — arguments naming a tenant
// or member are ignored; the call acts as the host's turn.
func TestForgedIdentityIgnored(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			ctx := deadline(t)
			st := memory.New(clock)
			srv, err := mcpserver.NewWorkspace(st, mcpserver.WorkspaceOptions{Turn: alice})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, ctx, srv, kind)
			calls := []step{
				{workspace.ToolRemember, `{"scope":"member","key":"k","content":"c","ifRevision":null,"memberId":"mallory","tenant":"evil","tenantId":"evil","member":"mallory","userId":"mallory","turnId":"t9"}`, true},
				{workspace.ToolFilesWrite, `{"path":"/files/f","content":"c","ifRevision":null,"tenant":"evil","memberId":"mallory"}`, true},
			}
			for _, c := range calls {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %+v", c.tool, err, res)
				}
			}
			got, err := st.List(ctx, alice.Tenant, "/")
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, m := range got {
				paths = append(paths, m.Path+" by "+m.UpdatedBy)
			}
			want := []string{"/files/f by alice", "/memories/members/alice/k by alice"}
			if diff := cmp.Diff(want, paths); diff != "" {
				t.Errorf("written (-want +got):\n%s", diff)
			}
			if evil, _ := st.List(ctx, "evil", "/"); len(evil) != 0 {
				t.Errorf("the forged tenant got %d documents", len(evil))
			}
		})
	}
}

// TestListTools: the server lists the in-process tools with
// their own descriptions and input schemas (WST-07, WST-08, WST-09).
func TestListTools(t *testing.T) {
	ctx := deadline(t)
	st := memory.New(clock)
	srv, err := mcpserver.NewWorkspace(st, mcpserver.WorkspaceOptions{Turn: alice, Version: "9.9"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, srv, "pipe")
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type listed struct {
		Name, Description string
		Schema            any
	}
	var got, want []listed
	for _, tool := range res.Tools {
		got = append(got, listed{tool.Name, tool.Description, tool.InputSchema})
	}
	for _, tool := range mcpserver.WorkspaceTools(st, nil, nil) {
		var s any
		if err := json.Unmarshal(canonjson.Marshal(tool.InputSchema), &s); err != nil {
			t.Fatal(err)
		}
		want = append(want, listed{tool.Name, tool.Description, s})
	}
	// The SDK lists tools sorted by name.
	byName := cmpopts.SortSlices(func(a, b listed) bool { return a.Name < b.Name })
	if diff := cmp.Diff(want, got, byName); diff != "" {
		t.Errorf("tools (-in-process +listed):\n%s", diff)
	}
	info := cs.InitializeResult().ServerInfo
	if info.Name != mcpserver.WorkspaceName || info.Version != "9.9" {
		t.Errorf("serverInfo %+v", info)
	}
}

// TestHTTPRequiresToken: with a token, a request without it (or with
// another) never reaches the server.
func TestHTTPRequiresToken(t *testing.T) {
	ctx := deadline(t)
	srv, err := mcpserver.NewWorkspace(memory.New(clock), mcpserver.WorkspaceOptions{Turn: alice})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Token: "right"}))
	t.Cleanup(hs.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		name, auth string
		want       int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong", "Bearer wrong", http.StatusUnauthorized},
		{"not bearer", "Basic cmlnaHQ=", http.StatusUnauthorized},
		{"right", "Bearer right", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient("wrong")}, nil); err == nil {
		cs.Close()
		t.Error("a client with the wrong token connected")
	}
}

// TestNewRefusesBadTools: tools MCP cannot serve are refused up front
// with an *InvalidToolError.
func TestNewRefusesBadTools(t *testing.T) {
	run := func(context.Context, canonjson.Value) (canonjson.Value, error) {
		return canonjson.ObjectValue(nil), nil
	}
	schema := func(s string) canonjson.Value {
		v, err := canonjson.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name  string
		tools []contract.Tool
		bad   string
	}{
		{"empty name", []contract.Tool{{Name: "", Run: run}}, ""},
		{"space in name", []contract.Tool{{Name: "a b", Run: run}}, "a b"},
		{"duplicate", []contract.Tool{{Name: "a", Run: run}, {Name: "a", Run: run}}, "a"},
		{"no run", []contract.Tool{{Name: "a"}}, "a"},
		{"array schema", []contract.Tool{{Name: "a", Run: run, InputSchema: schema(`{"type":"array"}`)}}, "a"},
		{"schema not object", []contract.Tool{{Name: "a", Run: run, InputSchema: schema(`true`)}}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mcpserver.New(tt.tools, nil)
			var ie *mcpserver.InvalidToolError
			if !errors.As(err, &ie) || ie.Tool != tt.bad {
				t.Errorf("got %v, want an InvalidToolError for %q", err, tt.bad)
			}
		})
	}
	if _, err := mcpserver.NewWorkspace(memory.New(clock), mcpserver.WorkspaceOptions{Turn: workspace.ActiveTurn{Tenant: "acme"}}); !errors.Is(err, mcpserver.ErrInvalidTurn) {
		t.Errorf("a turn without a member: got %v, want ErrInvalidTurn", err)
	}
}

// TestPanickingToolIsAResult: a panic is an executor_error result and the
// session goes on; Bind supplies the context.
func TestPanickingToolIsAResult(t *testing.T) {
	ctx := deadline(t)
	type key struct{}
	ts := []contract.Tool{
		{Name: "boom", Run: func(context.Context, canonjson.Value) (canonjson.Value, error) { panic("kaboom") }},
		{Name: "who", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
			s, _ := ctx.Value(key{}).(string)
			return canonjson.ToValue(map[string]string{"bound": s})
		}},
	}
	srv, err := mcpserver.New(ts, &mcpserver.Options{Bind: func(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, "host") }})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, srv, "pipe")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeOf(t, res); got.OK || got.Code != kernel.CodeExecutorError || !strings.Contains(got.Reason, "kaboom") {
		t.Errorf("panic: got %+v", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "who"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outcome{OK: true, Output: map[string]any{"bound": "host"}}, outcomeOf(t, res)); diff != "" {
		t.Errorf("after the panic (-want +got):\n%s", diff)
	}
}

// TestCallTimeout: a call that outlives Options.CallTimeout has its
// context ended and fails as a tool result.
func TestCallTimeout(t *testing.T) {
	ctx := deadline(t)
	ts := []contract.Tool{{Name: "slow", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
		<-ctx.Done() // the call's deadline, not the test's
		return canonjson.Value{}, ctx.Err()
	}}}
	srv, err := mcpserver.New(ts, &mcpserver.Options{CallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := connect(t, ctx, srv, "pipe").CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomeOf(t, res); got.OK || got.Code != kernel.CodeToolError || !strings.Contains(got.Reason, "deadline") {
		t.Errorf("got %+v, want a tool_error for the deadline", got)
	}
}

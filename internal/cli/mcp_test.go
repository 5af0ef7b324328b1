package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/workspace"
	wssqlite "github.com/agentrt/agentrt/workspace/sqlite"
)

// mcpDeadline bounds one MCP test, the build of the binary included.
func mcpDeadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// callTool calls a tool and returns its structured result; a failed
// call fails the test.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name, args string) any {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: refused: %+v", name, res.Content)
	}
	return res.StructuredContent
}

// inProcessCall runs a workspace tool in this process as turn.
func inProcessCall(t *testing.T, ctx context.Context, st workspace.Store, turn workspace.ActiveTurn, name, args string) any {
	t.Helper()
	for _, tool := range append(workspace.MemoryTools(st, nil), workspace.FileTools(st, nil)...) {
		if tool.Name != name {
			continue
		}
		v, err := tool.Run(workspace.WithActiveTurn(ctx, turn), mustDecodeValue(t, args))
		if err != nil {
			t.Fatalf("in-process %s: %v", name, err)
		}
		var x any
		if err := json.Unmarshal(canonjson.Marshal(v), &x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func mustDecodeValue(t *testing.T, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMCPWorkspaceBinaryStdio runs the real agentrt binary as an MCP
// stdio server and drives it with the SDK client: identity comes from
// the environment, forged identity arguments are ignored, and the
// results equal the in-process tools over the same SQLite file (WST-09,
// WST-10).
func TestMCPWorkspaceBinaryStdio(t *testing.T) {
	t.Parallel()
	ctx := mcpDeadline(t)
	bin := buildAgentrt(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "agentrt.db")
	cmd := exec.Command(bin, "mcp", "workspace", "--db", db)
	cmd.Env = append(os.Environ(), "AGENTRT_TENANT=acme", "AGENTRT_MEMBER=alice", "AGENTRT_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
	}
	want := []string{"files.delete", "files.list", "files.read", "files.search", "files.write", "memory.forget", "memory.recall", "memory.remember"}
	sort.Strings(names)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	got := callTool(t, ctx, cs, workspace.ToolRemember, `{"scope":"member","key":"tea","content":"green","ifRevision":null,"memberId":"mallory","tenant":"evil"}`)
	if path := got.(map[string]any)["path"]; path != "/memories/members/alice/tea" {
		t.Errorf("remembered at %v, want alice's scope", path)
	}
	callTool(t, ctx, cs, workspace.ToolFilesWrite, `{"path":"/files/plan.md","content":"ship it","ifRevision":null}`)
	overMCP := callTool(t, ctx, cs, workspace.ToolRecall, `{}`)
	filesOverMCP := callTool(t, ctx, cs, workspace.ToolFilesList, `{}`)
	// Closing stdin is the MCP stdio shutdown: the server exits 0 and,
	// in a session without trouble, logs nothing.
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !cmd.ProcessState.Success() || stderr.Len() != 0 {
		t.Errorf("the server ended with %v and stderr %q", cmd.ProcessState, stderr.String())
	}

	st, err := wssqlite.Open(ctx, db, wssqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	alice := workspace.ActiveTurn{Tenant: "acme", Member: "alice"}
	if diff := cmp.Diff(inProcessCall(t, ctx, st, alice, workspace.ToolRecall, `{}`), overMCP); diff != "" {
		t.Errorf("memory.recall (-in-process +MCP):\n%s", diff)
	}
	if diff := cmp.Diff(inProcessCall(t, ctx, st, alice, workspace.ToolFilesList, `{}`), filesOverMCP); diff != "" {
		t.Errorf("files.list (-in-process +MCP):\n%s", diff)
	}
	if evil, _ := st.List(ctx, "evil", "/"); len(evil) != 0 {
		t.Errorf("the forged tenant got %d documents", len(evil))
	}
}

var mcpListening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+/mcp)`)

// mcpServer is an agentrt mcp workspace command running in this process
// over streamable HTTP.
type mcpServer struct {
	url  string
	stop context.CancelFunc
	done chan int
	mu   sync.Mutex
	log  strings.Builder
}

// stderr returns what the command wrote to stderr so far.
func (m *mcpServer) stderr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log.String()
}

// shutdown cancels the command and returns its exit code.
func (m *mcpServer) shutdown(t *testing.T, ctx context.Context) int {
	t.Helper()
	m.stop()
	select {
	case code := <-m.done:
		return code
	case <-ctx.Done():
		t.Fatal("the server did not stop")
		return -1
	}
}

// startMCPHTTP runs agentrt mcp SUB --http 127.0.0.1:0 with args and
// returns once it listens.
func startMCPHTTP(t *testing.T, ctx context.Context, sub string, args ...string) *mcpServer {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	m := &mcpServer{stop: stop, done: make(chan int, 1)}
	errR, errW := io.Pipe()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			m.mu.Lock()
			m.log.WriteString(sc.Text() + "\n")
			m.mu.Unlock()
			if u := mcpListening.FindStringSubmatch(sc.Text()); u != nil {
				found <- u[1]
			}
		}
	}()
	go func() {
		var out bytes.Buffer
		m.done <- cli.Main(runCtx, append([]string{"mcp", sub, "--http", "127.0.0.1:0"}, args...),
			cli.IO{In: strings.NewReader(""), Out: &out, Err: errW})
		errW.Close()
	}()
	t.Cleanup(stop)
	select {
	case m.url = <-found:
	case code := <-m.done:
		t.Fatalf("agentrt mcp %s exited %d before listening:\n%s", sub, code, m.stderr())
	case <-ctx.Done():
		t.Fatal("the server never listened")
	}
	return m
}

// connectHTTP connects an SDK client to url with the bearer token.
func connectHTTP(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: authTransport{token}}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPWorkspaceHTTP serves the workspace over streamable HTTP on
// loopback behind a token file, and stops on cancellation.
func TestMCPWorkspaceHTTP(t *testing.T) {
	ctx := mcpDeadline(t)
	const token = "mcp-test-token-0123456789"
	tokenFile := writeFile(t, "token", token+"\n")
	db := filepath.Join(t.TempDir(), "ws.db")
	srv := startMCPHTTP(t, ctx, "workspace", "--db", db, "--tenant", "acme", "--member", "bob", "--token-file", tokenFile)

	cs := connectHTTP(t, ctx, srv.url, token)
	callTool(t, ctx, cs, workspace.ToolFilesWrite, `{"path":"/files/a.txt","content":"hello","ifRevision":null,"member":"mallory"}`)
	read := callTool(t, ctx, cs, workspace.ToolFilesRead, `{"path":"/files/a.txt"}`).(map[string]any)
	if read["content"] != "hello" {
		t.Errorf("read %v", read)
	}
	cs.Close()

	resp, err := http.Post(srv.url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the token: status %d, want 401", resp.StatusCode)
	}

	if code := srv.shutdown(t, ctx); code != cli.ExitOK {
		t.Errorf("exit %d after cancellation, want 0", code)
	}
	if strings.Contains(srv.stderr(), token) {
		t.Error("stderr carries the token")
	}
	st, err := wssqlite.Open(ctx, db, wssqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	doc, err := st.Get(ctx, "acme", "/files/a.txt")
	if err != nil || doc.UpdatedBy != "bob" {
		t.Errorf("stored %+v, %v; want written by bob", doc.Meta, err)
	}
}

// TestMCPWorkspaceOnPostgres: two servers on one PostgreSQL database,
// acting as two members of one tenant, share the workspace memories and
// keep their member memories apart (WST-01 and the default policy, over
// MCP); the password never reaches stderr.
func TestMCPWorkspaceOnPostgres(t *testing.T) {
	db := pgtest.Schema(t)
	ctx := mcpDeadline(t)
	t.Setenv("AGENTRT_MCP_TOKEN", "")
	alice := startMCPHTTP(t, ctx, "workspace", "--database", db, "--tenant", "acme", "--member", "alice")
	bob := startMCPHTTP(t, ctx, "workspace", "--database", db, "--tenant", "acme", "--member", "bob")
	ca, cb := connectHTTP(t, ctx, alice.url, ""), connectHTTP(t, ctx, bob.url, "")

	callTool(t, ctx, ca, workspace.ToolRemember, `{"scope":"workspace","key":"deploys","content":"tuesdays","ifRevision":null}`)
	callTool(t, ctx, ca, workspace.ToolRemember, `{"scope":"member","key":"secret","content":"alice only","ifRevision":null}`)
	got := callTool(t, ctx, cb, workspace.ToolRecall, `{}`).(map[string]any)["memories"].([]any)
	var keys []string
	for _, m := range got {
		keys = append(keys, m.(map[string]any)["path"].(string))
	}
	if diff := cmp.Diff([]string{"/memories/workspace/deploys"}, keys); diff != "" {
		t.Errorf("bob recalls (-want +got):\n%s", diff)
	}
	for _, srv := range []*mcpServer{alice, bob} {
		if code := srv.shutdown(t, ctx); code != cli.ExitOK {
			t.Errorf("exit %d, want 0", code)
		}
		// (The test password may be a word the log uses, such as
		// "agentrt": look for it where a URL would carry it.)
		if pw, ok := passwordOf(db); ok && strings.Contains(srv.stderr(), ":"+pw+"@") {
			t.Error("stderr carries the database password")
		}
	}
}

// passwordOf returns the password of a postgres:// URL, if it has one.
func passwordOf(raw string) (string, bool) {
	u, err := neturl.Parse(raw)
	if err != nil || u.User == nil {
		return "", false
	}
	return u.User.Password()
}

type authTransport struct{ token string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPWorkspaceUsage: the command refuses unsafe or incomplete setups
// before it serves anything.
func TestMCPWorkspaceUsage(t *testing.T) {
	t.Setenv("AGENTRT_TENANT", "")
	t.Setenv("AGENTRT_MEMBER", "")
	t.Setenv("AGENTRT_MCP_TOKEN", "")
	t.Setenv("AGENTRT_DATABASE_URL", "")
	db := filepath.Join(t.TempDir(), "ws.db")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tenant", []string{"--member", "m", "--db", db}, "--tenant"},
		{"no member", []string{"--tenant", "t", "--db", db}, "--member"},
		{"bad member", []string{"--tenant", "t", "--member", "a/b", "--db", db}, "member"},
		{"public without token", []string{"--tenant", "t", "--member", "m", "--db", db, "--http", "0.0.0.0:0"}, "without a token"},
		{"token for stdio", []string{"--tenant", "t", "--member", "m", "--db", db, "--token-file", db}, "--token-file"},
		{"two stores", []string{"--tenant", "t", "--member", "m", "--db", db, "--database", "postgres://x@127.0.0.1:1/x"}, "give one"},
		{"arguments", []string{"--tenant", "t", "--member", "m", "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, "", append([]string{"mcp", "workspace"}, tt.args...)...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d mentioning %q", code, stderr, cli.ExitUsage, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q: it belongs to the MCP transport", stdout)
			}
		})
	}
}

// TestMCPWorkspaceUnreachableDatabase: a database that cannot be reached
// fails the command (exit 1) without its password in the message.
func TestMCPWorkspaceUnreachableDatabase(t *testing.T) {
	_, stderr, code := run(t, "", "mcp", "workspace", "--tenant", "t", "--member", "m",
		"--database", "postgres://u:hunter2-secret@127.0.0.1:1/x?connect_timeout=2")
	if code != cli.ExitFailed || !strings.Contains(stderr, "opening the workspace") {
		t.Errorf("exit %d, stderr %q; want %d opening the workspace", code, stderr, cli.ExitFailed)
	}
	if strings.Contains(stderr, "hunter2") {
		t.Errorf("stderr carries the password: %q", stderr)
	}
}

// TestMCPWorkspaceStdioReadOnlyKnowledge runs the command in this process
// on stdio pipes: --read-only-knowledge refuses a write under /knowledge
// as a tool result, /files stays writable, and closing stdin ends the
// command with exit 0.
func TestMCPWorkspaceStdioReadOnlyKnowledge(t *testing.T) {
	ctx := mcpDeadline(t)
	db := filepath.Join(t.TempDir(), "ws.db")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"mcp", "workspace", "--db", db, "--tenant", "acme", "--member", "carol", "--read-only-knowledge"},
			cli.IO{In: inR, Out: outW, Err: &stderr})
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: workspace.ToolFilesWrite, Arguments: json.RawMessage(`{"path":"/knowledge/a.md","content":"x","ifRevision":null}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.StructuredContent.(map[string]any)["error"] != "refused" {
		t.Errorf("a write under /knowledge: %+v, want a refused result", res.StructuredContent)
	}
	callTool(t, ctx, cs, workspace.ToolFilesWrite, `{"path":"/files/a.md","content":"x","ifRevision":null}`)
	cs.Close() // closes the command's stdin
	select {
	case code := <-done:
		if code != cli.ExitOK || stderr.Len() != 0 {
			t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("the command did not end when stdin closed")
	}
}

package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
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
	ctx := mcpDeadline(t)
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("building agentrt needs the go command: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrt")
	if out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, "../../cmd/agentrt").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agentrt: %v\n%s", err, out)
	}
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
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
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

// TestMCPWorkspaceHTTP serves the workspace over streamable HTTP on
// loopback behind a token file, and stops on cancellation.
func TestMCPWorkspaceHTTP(t *testing.T) {
	ctx := mcpDeadline(t)
	dir := t.TempDir()
	const token = "mcp-test-token-0123456789"
	tokenFile := writeFile(t, "token", token+"\n")
	db := filepath.Join(dir, "ws.db")

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errR, errW := io.Pipe()
	var mu sync.Mutex
	var log strings.Builder
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := mcpListening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	done := make(chan int, 1)
	go func() {
		var out bytes.Buffer
		done <- cli.Main(runCtx, []string{"mcp", "workspace", "--db", db, "--tenant", "acme", "--member", "bob",
			"--http", "127.0.0.1:0", "--token-file", tokenFile}, cli.IO{In: strings.NewReader(""), Out: &out, Err: errW})
		errW.Close()
	}()
	var url string
	select {
	case url = <-found:
	case code := <-done:
		t.Fatalf("agentrt mcp workspace exited %d before listening:\n%s", code, log.String())
	case <-ctx.Done():
		t.Fatal("the server never listened")
	}

	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: authTransport{token}}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	callTool(t, ctx, cs, workspace.ToolFilesWrite, `{"path":"/files/a.txt","content":"hello","ifRevision":null,"member":"mallory"}`)
	read := callTool(t, ctx, cs, workspace.ToolFilesRead, `{"path":"/files/a.txt"}`).(map[string]any)
	if read["content"] != "hello" || read["updatedBy"] != nil && read["updatedBy"] != "bob" {
		t.Errorf("read %v", read)
	}
	cs.Close()

	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the token: status %d, want 401", resp.StatusCode)
	}

	stop()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Errorf("exit %d after cancellation, want 0", code)
		}
	case <-ctx.Done():
		t.Fatal("the server did not stop")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(log.String(), token) {
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

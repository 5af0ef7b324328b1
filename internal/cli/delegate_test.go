package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/supervise"
)

// delegateWorkerScript answers "alpha" at once and "slow" only after a
// minute (a worker still running when its server is killed).
const delegateWorkerScript = `{"turns": [
	{"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2}, "mode": "delta"}]},
	{"match": "slow", "repeat": true, "steps": [{"delayMs": 60000}, {"text": "slow: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2}, "mode": "delta"}]}]}`

// delegateFastScript answers both at once: the script of the server
// that resumes after the kill.
const delegateFastScript = `{"turns": [
	{"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2}, "mode": "delta"}]},
	{"match": "slow", "repeat": true, "steps": [{"text": "slow: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2}, "mode": "delta"}]}]}`

// delegateArgs are the flags of an agentrt mcp delegate server.
func delegateArgs(script, runDir string, store ...string) []string {
	return append([]string{"--manager", supManager, "--worker", noteWriter, "--expect", "DONE",
		"--script", script, "--run-dir", runDir, "--claim-ttl", "1s"}, store...)
}

// startDelegate starts the agentrt binary bin as an MCP delegation
// server (agentrt mcp delegate args…, AGENTRT_HOME=home) and connects to
// it over stdio; its stderr is collected.
func startDelegate(t *testing.T, ctx context.Context, bin, home string, args ...string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp", "delegate"}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTRT_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	return cs, cmd, &stderr
}

// toolResult calls a tool and returns its structured result; a protocol
// error or an isError result fails the test.
func toolResult(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name, args string) map[string]any {
	t.Helper()
	m, _ := callTool(t, ctx, cs, name, args).(map[string]any)
	return m
}

// TestMCPDelegateBinaryStdio runs the real agentrt binary as the
// delegation MCP server (OS-04, §9) on a SQLite store and drives it with
// the SDK client over stdio: a delegation completes with the checked
// result; the server is then killed (SIGKILL) while a second delegation
// runs, and a new server on the same store lists both and resumes the
// killed one from its journal instead of starting it over.
func TestMCPDelegateBinaryStdio(t *testing.T) {
	t.Parallel()
	ctx := mcpDeadline(t)
	bin := buildAgentrt(t)
	dir := t.TempDir()
	db, runDir := filepath.Join(dir, "agentrt.db"), filepath.Join(dir, "delegations")
	slow, fast := writeFile(t, "slow.json", delegateWorkerScript), writeFile(t, "fast.json", delegateFastScript)
	start := func(script string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
		return startDelegate(t, ctx, bin, dir, delegateArgs(script, runDir, "--db", db)...)
	}

	cs, cmd, _ := start(slow)
	// delegate is synchronous by default (§9): it answers with the
	// winner's output at the top level.
	done := toolResult(t, ctx, cs, "delegate", `{"intent": "write alpha", "idempotencyKey": "first"}`)
	if out, _ := done["out"].(string); done["status"] != "winner" || done["state"] != "completed" || !strings.Contains(out, "DONE") {
		t.Fatalf("first delegation: %v", done)
	}
	running := toolResult(t, ctx, cs, "delegate", `{"intent": "write slow", "waitSeconds": 0}`)
	if running["status"] != "pending" && running["status"] != "running" {
		t.Fatalf("waitSeconds 0 answers at once with the state: %v", running)
	}
	id := running["taskId"].(string)
	killedDir := filepath.Join(runDir, id)
	for !journaledKind(ctx, killedDir, supervise.KindSpawned) {
		select {
		case <-ctx.Done():
			t.Fatal("the slow delegation never spawned its worker")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	cs2, cmd2, stderr2 := start(fast)
	hist := toolResult(t, ctx, cs2, "delegation_history", `{}`)
	if hist["count"] != float64(2) {
		t.Fatalf("the restarted server lists %v delegations, want 2: %v", hist["count"], hist)
	}
	var st map[string]any
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		st = toolResult(t, ctx, cs2, "delegation_status", `{"taskId": "`+id+`", "waitSeconds": 10}`)
		if s := st["state"]; s != "pending" && s != "running" {
			break
		}
	}
	if st["state"] != "completed" || st["resumed"] != true || st["attempts"] != float64(2) {
		t.Errorf("the killed delegation after the restart: state %v resumed %v attempts %v failure %v", st["state"], st["resumed"], st["attempts"], st["failure"])
	}
	again := toolResult(t, ctx, cs2, "delegate", `{"intent": "write alpha", "idempotencyKey": "first"}`)
	if again["taskId"] != done["taskId"] || again["reused"] != true {
		t.Errorf("the key of the first delegation, after the restart: %v", again)
	}
	if err := cs2.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !cmd2.ProcessState.Success() {
		t.Errorf("the server ended with %v: %s", cmd2.ProcessState, stderr2.String())
	}
}

func journaledKind(ctx context.Context, dir, kind string) bool {
	recs, _, err := supervise.ReadRunDir(ctx, dir)
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// TestMCPDelegateHTTPOnPostgres serves the delegation tools over
// streamable HTTP on a PostgreSQL store behind a token: a delegation
// runs to its checked result, a refused request is a result, a request
// without the token is 401, and the token and the database password
// never reach stderr.
func TestMCPDelegateHTTPOnPostgres(t *testing.T) {
	dbURL := pgtest.Schema(t)
	ctx := mcpDeadline(t)
	const token = "delegate-test-token-0123456789"
	t.Setenv("AGENTRT_MCP_TOKEN", token)
	srv := startMCPHTTP(t, ctx, "delegate", delegateArgs(writeFile(t, "fast.json", delegateFastScript), t.TempDir(), "--database", dbURL)...)
	cs := connectHTTP(t, ctx, srv.url, token)
	got := toolResult(t, ctx, cs, "delegate", `{"intent": "write alpha", "budget": {"tokens": 5000}, "waitSeconds": 60}`)
	d, _ := got["delegation"].(map[string]any)
	if got["status"] != "winner" || got["state"] != "completed" || d["budget"].(map[string]any)["tokens"] != float64(5000) {
		t.Errorf("delegate: %v", got)
	}
	refused := toolResult(t, ctx, cs, "delegate", `{"intent": "write alpha", "budget": {"tokens": 1000000}}`)
	if refused["error"] != "budget-over-cap" || refused["path"] != "/budget/tokens" {
		t.Errorf("over the cap: %v", refused)
	}
	cs.Close()
	resp, err := http.Post(srv.url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("without the token: status %d, want 401", resp.StatusCode)
	}
	if code := srv.shutdown(t, ctx); code != cli.ExitOK {
		t.Errorf("exit %d after cancellation, want 0", code)
	}
	if strings.Contains(srv.stderr(), token) {
		t.Error("stderr carries the token")
	}
	if pw, ok := passwordOf(dbURL); ok && strings.Contains(srv.stderr(), ":"+pw+"@") {
		t.Error("stderr carries the database password")
	}
}

// TestMCPDelegateUsage: flags that cannot make a server are usage
// errors (exit 2) that say what to give.
func TestMCPDelegateUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no manager", []string{"mcp", "delegate", "--worker", noteWriter}, "--manager"},
		{"no worker", []string{"mcp", "delegate", "--manager", supManager}, "--worker"},
		{"open beyond loopback", []string{"mcp", "delegate", "--manager", supManager, "--worker", noteWriter, "--http", "0.0.0.0:0"}, "without a token"},
		{"bad cap", []string{"mcp", "delegate", "--manager", supManager, "--worker", noteWriter, "--budget-tokens", "0"}, "positive"},
		// An explicit 0 reserves nothing: refused, not read as "the default share".
		{"zero worker tokens", []string{"mcp", "delegate", "--manager", supManager, "--worker", noteWriter, "--worker-tokens", "0"}, "--worker-tokens 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AGENTRT_MCP_TOKEN", "")
			_, errOut, code := run(t, "", tc.args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q", code, errOut, tc.want)
			}
		})
	}
}

// TestCheckCommandDeliverable: --check-cmd delivers exactly the results
// for which the command exits 0, given the result on stdin.
func TestCheckCommandDeliverable(t *testing.T) {
	ctx := mcpDeadline(t)
	for _, tc := range []struct {
		name, cmd, text string
		passed, judged  bool
	}{
		{"passes", "grep -q DONE", "alpha: DONE", true, true},
		{"fails with reason", "grep -q DONE || { echo 'no DONE in it' >&2; exit 3; }", "alpha", false, true},
		{"times out", "sleep 30", "x", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := cli.CommandDeliverable(tc.cmd, 500*time.Millisecond)
			v, err := d.Check(ctx, supervise.Output{Text: tc.text})
			if (err == nil) != tc.judged || v.Passed != tc.passed {
				t.Errorf("verdict %+v, err %v", v, err)
			}
			if tc.name == "fails with reason" && !strings.Contains(v.Reason, "exited 3: no DONE in it") {
				t.Errorf("reason %q", v.Reason)
			}
		})
	}
}

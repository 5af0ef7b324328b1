package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/workspace"
)

// hostileText is run data an attacker controls (a worker's task echoed in
// its result, a check's expectation quoted in a failure reason): an OSC
// window-title change ended by BEL, a screen clear, a bare carriage
// return, a C1 CSI, DEL. hostileJSON is it as a JSON string body.
const (
	hostileText = "\x1b]0;evil\x07\x1b[2J\rX\u009b31m\x7f"
	hostileJSON = `\u001b]0;evil\u0007\u001b[2J\rX\u009b31m\u007f`
	// hostileBytes adds what JSON cannot carry: bytes that are not UTF-8.
	hostileBytes = hostileText + "\xff\xc3("
)

// terminalUnsafe lists what in s a terminal would obey or mangle: C0
// controls but \n and \t, DEL, C1 controls, bytes that are not UTF-8.
func terminalUnsafe(s string) []string {
	var bad []string
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			bad = append(bad, fmt.Sprintf("byte %#x at %d", s[i], i))
		case (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f):
			bad = append(bad, fmt.Sprintf("%U at %d", r, i))
		}
		i += size
	}
	return bad
}

// checkSafe fails the test when human output carries what a terminal
// would obey, and when it does not show the hostile text escaped (so the
// test saw the data at all).
func checkSafe(t *testing.T, what, s string) {
	t.Helper()
	if bad := terminalUnsafe(s); len(bad) > 0 {
		t.Errorf("%s writes to the terminal %s:\n%q", what, strings.Join(bad, ", "), s)
	}
}

func shows(t *testing.T, what, s string) {
	t.Helper()
	if !strings.Contains(s, `\x1b]0;evil`) {
		t.Errorf("%s does not show the hostile text escaped:\n%q", what, s)
	}
}

// TestHumanOutputIsTerminalSafe drives the real commands on a run whose
// worker result and failure reason carry terminal controls: progress on
// stderr, the summaries of supervise and graph, runs show and list, top
// --once, steer and cancel show them as visible escapes.
func TestHumanOutputIsTerminalSafe(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	spawn := `{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "note", "task": "` + hostileJSON + `"}}], "usage": {"inputTokens": 40, "outputTokens": 10}}`
	script := managerScript(t, `{"turns": [`+spawn+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", "supervise", supManager, "--task", hostileText, "--worker", noteWriter,
		"--manager-script", script, "--run-dir", dir, "--run-id", "rel", "--db", db, "--expect", hostileText)
	if code != 0 {
		t.Fatalf("supervise: exit %d\n%q\n%q", code, out, errOut)
	}
	checkSafe(t, "supervise (stdout)", out)
	checkSafe(t, "supervise progress (stderr)", errOut)
	shows(t, "supervise", out+errOut)

	out, errOut, _ = run(t, "", "runs", "show", "rel", "--db", db)
	checkSafe(t, "runs show", out+errOut)
	shows(t, "runs show", out+errOut)
	out, errOut, _ = run(t, "", "runs", "list", "--db", db)
	checkSafe(t, "runs list", out+errOut)
	shows(t, "runs list", out+errOut)
	out, errOut, _ = run(t, "", "top", "--once", "--run-dir", dir, "--db", db)
	checkSafe(t, "top --once", out+errOut)
	shows(t, "top --once", out+errOut)

	out, errOut, _ = run(t, "", "steer", dir, hostileText, hostileText)
	checkSafe(t, "steer", out+errOut)
	shows(t, "steer", out+errOut)
	out, errOut, _ = run(t, "", "cancel", dir, hostileBytes)
	checkSafe(t, "cancel", out+errOut)
	shows(t, "cancel", out+errOut)

	out, errOut, _ = run(t, "", "graph", reviewGraph, "--task", hostileText, "--directives", directives,
		"--run-dir", t.TempDir(), "--db", filepath.Join(t.TempDir(), "g.db"))
	checkSafe(t, "graph", out+errOut)
	shows(t, "graph", out+errOut)
}

// TestMachineOutputKeepsRunDataExact: the same run printed with --json
// carries the worker's text byte for byte — JSON-escaped where JSON
// must (C0), raw where JSON allows (C1, DEL) — never the terminal
// escapes of text for people.
func TestMachineOutputKeepsRunDataExact(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	spawn := `{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "note", "task": "` + hostileJSON + `"}}], "usage": {"inputTokens": 40, "outputTokens": 10}}`
	script := managerScript(t, `{"turns": [`+spawn+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", "supervise", supManager, "--task", hostileText, "--worker", noteWriter,
		"--manager-script", script, "--run-dir", dir, "--run-id", "rel", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("supervise --json: exit %d\n%q\n%q", code, out, errOut)
	}
	checkSafe(t, "supervise --json progress (stderr)", errOut)
	if got := member(member(decode(t, out), "winner"), "text").Str(); got != "Done: "+hostileText {
		t.Errorf("winner text %q, want %q", got, "Done: "+hostileText)
	}
	const rawTail = "\u009b31m\x7f" // what JSON leaves raw
	if !strings.Contains(out, `Done: `+hostileJSON[:6]) || !strings.Contains(out, rawTail) || strings.Contains(out, `\x1b`) {
		t.Errorf("supervise --json is not plain JSON of the exact text:\n%q", out)
	}
	out, _, code = run(t, "", "runs", "show", "rel", "--db", db, "--json")
	if code != 0 || !strings.Contains(out, rawTail) || strings.Contains(out, `\x1b`) {
		t.Errorf("runs show --json: exit %d, not plain JSON of the exact text:\n%q", code, out)
	}
	if got := member(member(decode(t, out), "record"), "task").Str(); got != hostileText {
		t.Errorf("runs show --json task %q, want %q", got, hostileText)
	}
}

// rawLog records what a stream carried; safe for one writer and a
// reader after it is done.
type rawLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *rawLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *rawLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMCPStdioIsNotEscaped: agentrt mcp's stdio transport is a machine
// stream; a file holding terminal controls is written and read back
// exactly, and the transport carries JSON's own bytes, none of the
// terminal escapes.
func TestMCPStdioIsNotEscaped(t *testing.T) {
	ctx := mcpDeadline(t)
	db := filepath.Join(t.TempDir(), "ws.db")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var wire rawLog
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"mcp", "workspace", "--db", db, "--tenant", "acme", "--member", "carol"},
			cli.IO{In: inR, Out: io.MultiWriter(outW, &wire), Err: &stderr})
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := json.Marshal(hostileText)
	callTool(t, ctx, cs, workspace.ToolFilesWrite, `{"path":"/files/a.md","content":`+string(content)+`,"ifRevision":null}`)
	got := callTool(t, ctx, cs, workspace.ToolFilesRead, `{"path":"/files/a.md"}`)
	cs.Close()
	if code := <-done; code != cli.ExitOK {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), string(content[1:len(content)-1])) {
		t.Errorf("files.read %s, want the content %s exactly", b, content)
	}
	if w := wire.String(); !strings.Contains(w, "\u009b31m\x7f") || strings.Contains(w, `\x1b`) {
		t.Errorf("the transport was escaped for a terminal:\n%q", w)
	}
}

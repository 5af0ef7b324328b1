package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/workspace/memory"
)

// TestStdioAnswersBadLines: §9's error codes on the stdio transport — a
// line that is not JSON gets -32700, JSON that is not a JSON-RPC message
// gets -32600, both with a null id, and the session goes on; a tool call
// after them still gets its result.
func TestStdioAnswersBadLines(t *testing.T) {
	ctx := deadline(t)
	srv, err := mcpserver.NewWorkspace(memory.New(clock), mcpserver.WorkspaceOptions{Turn: alice})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := srv.Connect(ctx, mcpserver.Stdio(inR, outW), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	exchange := func(send string) map[string]any {
		t.Helper()
		go io.WriteString(inW, send+"\n")
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", send, lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("answer %q: %v", lines.Text(), err)
		}
		return m
	}
	codeOf := func(m map[string]any) any {
		e, _ := m["error"].(map[string]any)
		return e["code"]
	}

	init := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if got := init["result"].(map[string]any)["protocolVersion"]; got != "2024-11-05" {
		t.Errorf("protocolVersion %v, want the client's 2024-11-05", got)
	}
	tests := []struct {
		line string
		code float64
	}{
		{`garbage`, -32700},
		{`{"jsonrpc":"2.0","id":2,"method":`, -32700},
		{`{"jsonrpc":"2.0","id":3,"method":"x"} trailing`, -32700},
		{`"just a string"`, -32600},
		{`{"hello":"world"}`, -32600},
	}
	for _, tt := range tests {
		got := exchange(tt.line)
		if diff := cmp.Diff(map[string]any{"jsonrpc": "2.0", "id": nil, "code": tt.code}, map[string]any{"jsonrpc": got["jsonrpc"], "id": got["id"], "code": codeOf(got)}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.line, diff)
		}
	}
	go io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	res := exchange(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"files.write","arguments":{"path":"/files/a","content":"x","ifRevision":null}}}`)
	if res["id"] != 7.0 || res["result"] == nil || !strings.Contains(lines.Text(), `"revision":1`) {
		t.Errorf("the call after bad lines: %s", lines.Text())
	}
	unknown := exchange(`{"jsonrpc":"2.0","id":8,"method":"no/such/method"}`)
	if codeOf(unknown) != -32601.0 {
		t.Errorf("an unknown method: %v, want -32601", unknown)
	}
	inW.Close()
	if err := ss.Wait(); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("the session ended with %v after EOF", err)
	}
}

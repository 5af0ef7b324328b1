// Command mcpprobe is a minimal stdio MCP server for the clibridge
// end-to-end tests: JSON-RPC 2.0, one message per line on standard input
// and output. It answers initialize, ping, tools/list (one tool,
// "probe_echo") and tools/call, and ignores notifications. probe_echo
// returns "probe-echo:" + its text argument, then, for the variable named
// by MCPPROBE_DIGEST_OF (when set), " digest:" + the sha256 hex of that
// variable's value, so a test can prove the server received a value
// without the value itself appearing in the tool output. With
// MCPPROBE_LOG set, the server appends "cwd <its working directory>" and
// "args <its arguments, space-separated>" when it starts and then every method received to that file, one a
// line. With MCPPROBE_START_DELAY_MS set, it waits that long before
// reading its first message (a server slow to start).
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	if wd, err := os.Getwd(); err == nil {
		logLine("cwd " + wd)
	}
	logLine("args " + strings.Join(os.Args[1:], " "))
	if ms, err := strconv.Atoi(os.Getenv("MCPPROBE_START_DELAY_MS")); err == nil && ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			continue
		}
		logLine(req.Method)
		if len(req.ID) == 0 {
			continue // a notification
		}
		resp := response{JSONRPC: "2.0", ID: req.ID}
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(req.Params, &p)
			if p.ProtocolVersion == "" {
				p.ProtocolVersion = "2025-06-18"
			}
			resp.Result = map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "mcpprobe", "version": "1.0.0"},
			}
		case "ping":
			resp.Result = map[string]any{}
		case "tools/list":
			resp.Result = map[string]any{"tools": []any{map[string]any{
				"name":        "probe_echo",
				"description": "Echoes its text argument (agentrt clibridge MCP probe).",
				"inputSchema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"text": map[string]any{"type": "string"}},
					"required":   []string{"text"},
				},
			}}}
		case "tools/call":
			var p struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			}
			json.Unmarshal(req.Params, &p)
			if p.Name != "probe_echo" {
				resp.Error = &rpcError{Code: -32602, Message: "unknown tool " + p.Name}
				break
			}
			text := "probe-echo:" + p.Arguments.Text
			if name := os.Getenv("MCPPROBE_DIGEST_OF"); name != "" {
				sum := sha256.Sum256([]byte(os.Getenv(name)))
				text += " digest:" + hex.EncodeToString(sum[:])
			}
			resp.Result = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
		default:
			resp.Error = &rpcError{Code: -32601, Message: "method not found: " + req.Method}
		}
		out.Encode(resp)
	}
}

// logLine appends line to $MCPPROBE_LOG, when set.
func logLine(line string) {
	path := os.Getenv("MCPPROBE_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

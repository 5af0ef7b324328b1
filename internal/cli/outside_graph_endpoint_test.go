package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is an outside party's model endpoint for agentrt graph and
// agentrt supervise driven through the built binary with --provider
// openai: an OpenAI-compatible chat-completions server scripted per
// request, that counts what reaches it. It knows agentrt only by its
// wire: a request offering an agent_runtime_coordination_* tool is the
// manager's; any other is a worker's, told apart by its model.

// epCall is one tool call of a scripted answer.
type epCall struct {
	Name string
	Args map[string]any
}

// epAnswer is one scripted answer of the endpoint.
type epAnswer struct {
	// Text is the assistant's text.
	Text string
	// Calls are the assistant's tool calls (bare verb names are given the
	// coordination prefix).
	Calls []epCall
	// NoUsage leaves the usage report out of the answer.
	NoUsage bool
	// In, Out are the reported tokens (defaults 10 and 5).
	In, Out int64
	// Status, when not 0, answers with this HTTP status and an error body.
	Status int
	// Garbage answers 200 with a body that is not a completion.
	Garbage bool
	// Hold, when not nil, holds the answer until it is closed or the
	// request is gone.
	Hold chan struct{}
}

// epRequest is what the endpoint read from one request.
type epRequest struct {
	Model   string
	Manager bool
	Stream  bool
	// Steps is how many assistant messages the conversation holds: the
	// manager's turn index.
	Steps int
	// Tools are the offered tools' names.
	Tools []string
	// ToolResults are the tool messages' contents, in order.
	ToolResults []string
	// Text is every message's content joined: what the model was told.
	Text string
	// User is the last user message's content.
	User string
}

// epServer is the scripted endpoint.
type epServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	// manager answers the manager's request at its turn index.
	manager func(r epRequest) epAnswer
	// worker answers a worker's request.
	worker func(r epRequest) epAnswer
	reqs   []epRequest
}

func newEPServer(t *testing.T, manager, worker func(r epRequest) epAnswer) *epServer {
	t.Helper()
	s := &epServer{manager: manager, worker: worker}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL agentrt is given (--base-url).
func (s *epServer) URL() string { return s.srv.URL + "/v1" }

// requests is a copy of every request read so far.
func (s *epServer) requests() []epRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]epRequest(nil), s.reqs...)
}

// count is how many requests asked for model (all of them for "").
func (s *epServer) count(model string) int {
	n := 0
	for _, r := range s.requests() {
		if model == "" || r.Model == model {
			n++
		}
	}
	return n
}

func (s *epServer) serve(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeChatRequest(w, r)
	if !ok {
		return
	}
	er := epRequest{Model: req.Model, Stream: req.Stream}
	var text strings.Builder
	for _, tl := range req.Tools {
		er.Tools = append(er.Tools, tl.Function.Name)
		er.Manager = er.Manager || strings.HasPrefix(tl.Function.Name, coordinationPrefix)
	}
	for _, m := range req.Messages {
		c := contentText(m.Content)
		text.WriteString(c + "\n")
		switch m.Role {
		case "tool":
			er.ToolResults = append(er.ToolResults, c)
		case "assistant":
			er.Steps++
		case "user":
			er.User = c
		}
	}
	er.Text = text.String()
	s.mu.Lock()
	s.reqs = append(s.reqs, er)
	s.mu.Unlock()
	var a epAnswer
	if er.Manager {
		a = s.manager(er)
	} else {
		a = s.worker(er)
	}
	if a.Hold != nil {
		select {
		case <-a.Hold:
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case a.Status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		fmt.Fprint(w, `{"error":{"message":"scripted failure","type":"server_error"}}`)
		return
	case a.Garbage:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `<html>not json at all`)
		return
	}
	in, out := a.In, a.Out
	if in == 0 && out == 0 {
		in, out = 10, 5
	}
	var calls []any
	for i, c := range a.Calls {
		name := c.Name
		if !strings.HasPrefix(name, coordinationPrefix) {
			name = coordinationPrefix + name
		}
		args, _ := json.Marshal(c.Args)
		calls = append(calls, map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", er.Steps, i), "type": "function",
			"function": map[string]any{"name": name, "arguments": string(args)}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": a.Text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		resp := map[string]any{"id": "cmpl", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}}
		if !a.NoUsage {
			resp["usage"] = usage
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	st := startOpenAIStream(w, "cmpl", req.Model)
	if a.Text != "" {
		st.text(a.Text)
	}
	if len(calls) > 0 {
		st.delta(map[string]any{"role": "assistant", "tool_calls": calls}, nil)
	}
	st.finish(finish)
	if !a.NoUsage {
		st.usage(in, out)
	}
	st.done()
}

// contentText is a message content as text (a string, or text parts).
func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// epRun is one finished run of the binary.
type epRun struct {
	stdout, stderr string
	code           int
}

// json decodes stdout as the --json result.
func (r epRun) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not JSON (%v); exit %d\nstdout:\n%s\nstderr:\n%s", err, r.code, r.stdout, r.stderr)
	}
	return v
}

// runAgentrtEP runs the built binary against the endpoint (OPENAI_API_KEY
// set) and waits for it, within a deadline.
func runAgentrtEP(t *testing.T, args ...string) epRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildAgentrt(t), args...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-outside-graph")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := epRun{stdout: out.String(), stderr: errb.String()}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		r.code = ee.ExitCode()
		return r
	}
	if err != nil {
		t.Fatalf("agentrt %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// at walks v by member names and array indexes ("ledger", 0, "outcome").
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// epFile writes body to dir/name.
func epFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// jsonl reads a JSON-lines file into its records (a torn line is an error).
func jsonl(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s line %d: %v: %s", path, i+1, err, line)
		}
		recs = append(recs, m)
	}
	return recs
}

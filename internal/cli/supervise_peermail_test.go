package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/supervise"
)

// peerMailSubject is what alpha mails beta in mailingClaudeAPI.
const peerMailSubject = "alpha-subject-42"

// mailingClaudeAPI is a local Anthropic Messages API for two claude-code
// workers, told apart by their model: alpha (claude-alpha) waits until
// beta's first request arrived (beta is live), reads its mailbox to
// learn beta's id, sends beta one ask and answers "alpha: DONE"; beta
// waits until alpha's send came back, reads its mailbox and answers
// "beta saw SUBJECT: DONE" when its request carries alpha's subject.
// seen is what beta's request after its read_mail carried (its tool
// result), and tools the peer mail tools offered to each worker.
type mailingClaudeAPI struct {
	mu          sync.Mutex
	betaStarted chan struct{}
	alphaSent   chan struct{}
	once        [2]sync.Once
	seen        string
	tools       map[string][]string
}

const peerMailToolPrefix = "mcp__" + supervise.PeerMailAlias + "__"

var workerIDInReadout = regexp.MustCompile(`workerId\\*":\s*\\*"([^"\\]+)`)

func newMailingClaudeAPI(t *testing.T) (*mailingClaudeAPI, string) {
	api := &mailingClaudeAPI{betaStarted: make(chan struct{}), alphaSent: make(chan struct{}), tools: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(srv.Close)
	return api, srv.URL
}

func (api *mailingClaudeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return
	}
	var req struct {
		Model string `json:"model"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	var mail []string
	for _, tl := range req.Tools {
		if strings.HasPrefix(tl.Name, peerMailToolPrefix) {
			mail = append(mail, strings.TrimPrefix(tl.Name, peerMailToolPrefix))
		}
	}
	results := strings.Count(string(body), `"type":"tool_result"`)
	api.mu.Lock()
	if _, ok := api.tools[req.Model]; !ok {
		api.tools[req.Model] = mail
	}
	api.mu.Unlock()
	wait := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-r.Context().Done():
		case <-time.After(90 * time.Second):
		}
		return false
	}
	tool, input, text := "", "", "DONE"
	switch req.Model {
	case "claude-alpha":
		switch results {
		case 0:
			if !wait(api.betaStarted) {
				text = "alpha: beta never started"
				break
			}
			tool, input = "read_mail", `{}`
		case 1:
			m := workerIDInReadout.FindStringSubmatch(string(body))
			if m == nil {
				text = "alpha: no peer in read_mail"
				break
			}
			args, _ := json.Marshal(map[string]any{"to": m[1], "kind": "ask", "subject": peerMailSubject, "body": "which number did you pick?"})
			tool, input = "send_mail", string(args)
		default:
			api.once[1].Do(func() { close(api.alphaSent) })
			text = "alpha: DONE"
		}
	case "claude-beta":
		switch results {
		case 0:
			api.once[0].Do(func() { close(api.betaStarted) })
			if !wait(api.alphaSent) {
				text = "beta: alpha never sent"
				break
			}
			tool, input = "read_mail", `{}`
		default:
			api.mu.Lock()
			api.seen = string(body)
			api.mu.Unlock()
			text = "beta saw nothing: DONE"
			if strings.Contains(string(body), peerMailSubject) {
				text = "beta saw " + peerMailSubject + ": DONE"
			}
		}
	}
	writeClaudeTurn(w, req.Model, tool, input, text)
}

// writeClaudeTurn streams one Messages API answer: a tool_use of the
// peer mail tool named tool with input, or text.
func writeClaudeTurn(w http.ResponseWriter, model, tool, input, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	id := fmt.Sprint(time.Now().UnixNano())
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_" + id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 20, "output_tokens": 1}}})
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": "toolu_" + id, "name": peerMailToolPrefix + tool, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// §9 peer mail through the built binary: agentrt supervise --peer-mail
// runs two claude-code workers (the real CLI, their model a local
// endpoint) under the default plan; each is given send_mail and
// read_mail as the MCP server agent-runtime-peer-mail (and nothing
// else of the channel); alpha reads its mailbox for beta's id and mails
// it, and beta's next turn reads the mail — its read_mail result
// carries alpha's subject. The attempt is in the run dir's
// coordination-log.jsonl, delivered, sent as alpha (the capability's
// worker, not an argument).
func TestSupervisePeerMailBetweenClaudeWorkers(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	api, url := newMailingClaudeAPI(t)
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	manager := write("manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	alpha := write("alpha.json", `{"name": "alpha", "harness": "claude-code", "model": {"default": "claude-alpha"}}`)
	beta := write("beta.json", `{"name": "beta", "harness": "claude-code", "model": {"default": "claude-beta"}}`)
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Beta first: the default plan spawns in --worker order.
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", beta, "--worker", alpha, "--task", "compare numbers",
		"--worker-provider", "claude-code", "--worker-base-url", url, "--peer-mail", "--expect", "DONE",
		"--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-fake-cli-key", "PATH="+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentrt supervise: %v\nstdout %s\nstderr %s", err, out, stderr.String())
	}
	if s := member(decode(t, string(out)), "status"); s.Str() != "winner" {
		t.Errorf("status %v, want winner:\n%s", s, out)
	}
	api.mu.Lock()
	seen, tools := api.seen, api.tools
	api.mu.Unlock()
	for _, model := range []string{"claude-alpha", "claude-beta"} {
		if got := strings.Join(tools[model], ","); got != "read_mail,send_mail" && got != "send_mail,read_mail" {
			t.Errorf("%s was offered peer mail tools %q, want send_mail and read_mail", model, got)
		}
	}
	if !strings.Contains(seen, peerMailSubject) {
		t.Errorf("beta's turn after read_mail does not carry alpha's mail %q:\n%.2000s", peerMailSubject, seen)
	}
	f, err := os.Open(filepath.Join(runDir, supervise.CoordinationLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mails []supervise.MailRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var rec supervise.CoordRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("coordination log line %q: %v", sc.Bytes(), err)
		}
		if rec.Kind == supervise.CoordMail && rec.Mail != nil {
			mails = append(mails, *rec.Mail)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(mails) != 1 {
		t.Fatalf("coordination log holds %d mail records, want 1: %+v", len(mails), mails)
	}
	m := mails[0]
	if m.Outcome != supervise.MailDelivered || m.Envelope.Subject != peerMailSubject || m.Envelope.Kind != "ask" {
		t.Errorf("mail record %+v, want alpha's ask delivered", m)
	}
	// Beta was spawned first (s1), alpha second (s2).
	if m.Envelope.From != "run1:s2" || m.Envelope.To != "run1:s1" {
		t.Errorf("mail from %s to %s, want run1:s2 (alpha) to run1:s1 (beta)", m.Envelope.From, m.Envelope.To)
	}
}

// --peer-mail mounts an MCP server in each worker's harness: workers on
// a provider that cannot mount one (scripted, openai, ...) or on
// another machine (--fleet) are refused as usage (exit 2) before
// anything runs, never run without the mail the run offers.
func TestSupervisePeerMailRefusesWorkersWithoutAHarness(t *testing.T) {
	dir := t.TempDir()
	mgr := filepath.Join(dir, "manager.json")
	wrk := filepath.Join(dir, "w.json")
	// The manager grants a coordination verb: one that grants none is
	// refused first, as no manager profile (checkRouterManager).
	os.WriteFile(mgr, []byte(`{"name": "manager", "tools": {"agent_runtime_coordination_spawn_worker": true}}`), 0o600)
	os.WriteFile(wrk, []byte(`{"name": "w"}`), 0o600)
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"scripted workers", nil, "workers on scripted cannot mount"},
		{"one node on openai", []string{"--worker-provider", "claude-code", "--worker-provider", "w=openai"}, "workers on openai cannot mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"supervise", mgr, "--worker", wrk, "--task", "t", "--peer-mail", "--run-dir", filepath.Join(dir, tc.name), "--db", filepath.Join(dir, "runs.db")}, tc.extra...)
			out, errOut, code := run(t, "", args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
}

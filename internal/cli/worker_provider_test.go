package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// chatEndpoint is a local OpenAI-compatible chat-completions endpoint:
// it answers every request with answer (streamed, with usage) and keeps
// what each asked for.
type chatEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

func newChatEndpoint(t *testing.T, answer string) *chatEndpoint {
	t.Helper()
	e := &chatEndpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"not a chat completion"}}`, http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.requests = append(e.requests, req)
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(v string) { fmt.Fprintf(w, "data: %s\n\n", v) }
		text, _ := json.Marshal(answer)
		chunk(`{"id":"c1","object":"chat.completion.chunk","model":"` + req.Model + `","choices":[{"index":0,"delta":{"role":"assistant","content":` + string(text) + `},"finish_reason":null}]}`)
		chunk(`{"id":"c1","object":"chat.completion.chunk","model":"` + req.Model + `","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		chunk(`{"id":"c1","object":"chat.completion.chunk","model":"` + req.Model + `","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`)
		chunk(`[DONE]`)
	}))
	t.Cleanup(e.Close)
	return e
}

// asked returns the user text of every request, in arrival order.
func (e *chatEndpoint) asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.requests {
		var b strings.Builder
		for _, m := range r.Messages {
			if m.Role == "user" {
				fmt.Fprint(&b, m.Content)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// mixedGraph is driver → coder (on an OpenAI model) and driver →
// reviewer (scripted).
const mixedGraph = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"default": "gpt-coder"}}},
    {"id": "reviewer", "profile": {"name": "reviewer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/reviewer"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/implement/v1"},
    {"kind": "delegates", "from": "driver", "to": "reviewer", "directive": "delegate/review/v1"}
  ],
  "budget": {"tokens": 5000, "iterations": 6}
}`

// One graph, two providers: the root's scripted plan and the reviewer
// on --provider scripted, the coder node on --worker-provider
// coder=openai at --worker-base-url (a real HTTP endpoint). Only the
// coder's task reaches the endpoint, and its answer wins.
func TestGraphWorkerProviderPerNode(t *testing.T) {
	ep := newChatEndpoint(t, "patch: fixed on the OpenAI worker")
	t.Setenv("OPENAI_API_KEY", "sk-test-worker-9b1")
	graphFile := writeFile(t, "graph.json", mixedGraph)
	script := writeFile(t, "workers.json", `{"turns": [{"match": "Review the work", "repeat": true, "steps": [{"text": "review: looks safe"}]}]}`)
	out, errOut, code := run(t, "", "graph", graphFile, "--task", "Make the login test pass.", "--script", script, "--expect", "patch",
		"--worker-provider", "coder=openai", "--worker-base-url", ep.URL+"/v1/",
		"--run-id", "mixed", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if got := member(member(res, "winner"), "text").Str(); got != "patch: fixed on the OpenAI worker" {
		t.Errorf("winner %q, want the coder's answer from the endpoint: %s", got, out)
	}
	asked := ep.asked()
	if len(asked) != 1 || !strings.Contains(asked[0], "Implement the change") || strings.Contains(asked[0], "Review the work") {
		t.Errorf("the endpoint was asked %q; want the coder's task only", asked)
	}
	var reviewer bool
	for _, n := range member(res, "workers").Items() {
		reviewer = reviewer || member(n, "profile").Str() == "reviewer" && member(n, "state").Str() == "done"
	}
	if !reviewer {
		t.Errorf("the scripted reviewer did not finish: %s", out)
	}
	if strings.Contains(out+errOut, "sk-test-worker-9b1") {
		t.Error("the key was printed")
	}
}

// agentrt supervise --worker-provider openai: the scripted manager's
// default plan spawns its worker, which runs on the OpenAI endpoint, not
// on --provider scripted.
func TestSuperviseWorkerProvider(t *testing.T) {
	ep := newChatEndpoint(t, "Release notes: the login test passes.")
	t.Setenv("OPENAI_API_KEY", "sk-test-worker-9b1")
	worker := writeFile(t, "note-writer.json", `{"name": "note-writer", "harness": "cli-base", "model": {"default": "gpt-notes"}}`)
	out, errOut, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", worker,
		"--worker-provider", "openai", "--worker-base-url", ep.URL+"/v1/", "--expect", "Release notes",
		"--run-id", "notes", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := member(member(decode(t, out), "winner"), "text").Str(); got != "Release notes: the login test passes." {
		t.Errorf("winner %q: the worker did not run on the endpoint: %s", got, out)
	}
	if asked := ep.asked(); len(asked) != 1 || !strings.Contains(asked[0], "Write release notes.") {
		t.Errorf("the endpoint was asked %q", asked)
	}
	if ep.requests[0].Model != "gpt-notes" {
		t.Errorf("the endpoint was asked for model %q, want the worker profile's gpt-notes", ep.requests[0].Model)
	}
}

// --worker-provider refusals are usage errors (2) before anything runs:
// an unknown node, the root, a node named twice, two providers for all
// workers, no provider, and --worker-base-url with no worker on a
// provider other than --provider.
func TestWorkerProviderRefusals(t *testing.T) {
	graphFile := writeFile(t, "graph.json", mixedGraph)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown node", []string{"--worker-provider", "tester=openai"}, `no node "tester" (known: coder, reviewer)`},
		{"root", []string{"--worker-provider", "driver=openai"}, `"driver" is the manager`},
		{"node twice", []string{"--worker-provider", "coder=openai", "--worker-provider", "coder=anthropic"}, `node "coder" twice`},
		{"all twice", []string{"--worker-provider", "openai", "--worker-provider", "anthropic"}, "twice (openai and anthropic)"},
		{"no provider", []string{"--worker-provider", "coder="}, "names no provider"},
		{"remote without its address", []string{"--worker-provider", "coder=remote"}, "--worker-provider remote needs --worker-base-url"},
		{"endpoint unused", []string{"--worker-base-url", "http://127.0.0.1:1/v1/"}, "apply to a --worker-provider other than --provider scripted"},
		{"endpoint of the same", []string{"--worker-provider", "scripted", "--worker-base-url", "http://127.0.0.1:1/v1/"}, "apply to a --worker-provider other than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"graph", graphFile, "--task", "t", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db")}, tc.args...)
			_, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, errOut, tc.want)
			}
		})
	}
	worker := writeFile(t, "note-writer.json", `{"name": "note-writer", "harness": "cli-base", "model": {"default": "gpt-notes"}}`)
	_, errOut, code := run(t, "", "supervise", supManager, "--task", "t", "--worker", worker, "--worker-provider", "notes=openai",
		"--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"))
	if code != 2 || !strings.Contains(errOut, `no worker "notes" (known: note-writer)`) {
		t.Errorf("supervise, unknown worker: exit %d\n%s", code, errOut)
	}
}

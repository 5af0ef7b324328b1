package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// seqEndpoint is an OpenAI-compatible chat-completions endpoint whose
// manager spawns one worker per step and awaits it before the next:
// turn 2k spawns plan[k], turn 2k+1 awaits it, the last turn answers.
// Every answer reports token usage and no dollars (OpenAI's chat
// completions report none). It keeps the manager's last request's tool
// results so a test can read what each spawn was told.
type seqEndpoint struct {
	*httptest.Server
	plan []string

	mu          sync.Mutex
	toolResults []string
	workerCalls map[string]int
}

func newSeqEndpoint(t *testing.T, plan ...string) *seqEndpoint {
	t.Helper()
	e := &seqEndpoint{plan: plan, workerCalls: map[string]int{}}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *seqEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	turn, ok := readOpenAITurn(w, r, e.plan)
	if !ok {
		return
	}
	e.mu.Lock()
	if turn.Manager {
		e.toolResults = turn.ToolResults
	} else {
		e.workerCalls[turn.Worker]++
	}
	e.mu.Unlock()
	s := startOpenAIStream(w, "c", turn.Model)
	finish := "tool_calls"
	callID := fmt.Sprint("call_", len(turn.ToolResults))
	switch step := len(turn.ToolResults); {
	case !turn.Manager:
		s.text(turn.Worker + ": DONE")
		finish = "stop"
	case step < 2*len(e.plan) && step%2 == 0:
		label := e.plan[step/2]
		s.calls(openAICall{callID, coordinationPrefix + "spawn_worker", map[string]string{"profile": "writer", "label": label, "task": "task " + label}})
	case step < 2*len(e.plan):
		s.calls(openAICall{callID, coordinationPrefix + "await_event", map[string]int{"timeoutMs": 60000}})
	default:
		s.text("Every worker settled.")
		finish = "stop"
	}
	s.finish(finish)
	s.usage(50, 5)
	s.done()
}

// Spec §6 reconcile, behaviour 39, over real HTTP: the root caps dollars
// (--budget-usd) and the workers declare no dollar ceiling (no
// --worker-usd). alpha runs on an endpoint that reports no dollars, so
// the root's dollar balance is no longer a bound: the dollar channel is
// tainted and beta's later spawn is refused (budget-exhausted), never
// run. The result says the dollars are unknown (usd null, usdKnown
// false) and names alpha's unreported dollars in spendGaps.
func TestSuperviseUndeclaredWorkerDollarsTaintBehaviour39(t *testing.T) {
	e := newSeqEndpoint(t, "alpha", "beta")
	t.Setenv("OPENAI_API_KEY", "sk-test-taint-51c")
	mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
	out, errOut, code := run(t, "", "supervise", mgr, "--worker", wrk, "--task", "write the notes", "--provider", "openai",
		"--base-url", e.URL+"/v1/", "--run-id", "taint", "--workspace", t.TempDir(),
		"--db", filepath.Join(t.TempDir(), "runs.db"), "--budget-tokens", "5000", "--worker-tokens", "1000",
		"--iterations", "4", "--budget-usd", "5", "--json")
	if strings.TrimSpace(out) == "" {
		t.Fatalf("no result: exit %d\n%s", code, errOut)
	}
	res := decode(t, out)
	e.mu.Lock()
	calls, results := e.workerCalls, e.toolResults
	e.mu.Unlock()
	if calls["alpha"] != 1 || calls["beta"] != 0 {
		t.Errorf("worker calls %v, want alpha once and beta never (its spawn refused):\n%s", calls, out)
	}
	if len(results) != 4 {
		t.Fatalf("the manager's last turn saw %d tool results, want 4:\n%v\n%s", len(results), results, out)
	}
	if !strings.Contains(results[2], "budget-exhausted") || !strings.Contains(results[2], "usd-tainted") {
		t.Errorf("beta's spawn answered %s; want a budget-exhausted refusal naming usd-tainted", results[2])
	}
	total := member(res, "spentTotal")
	if got := member(total, "usdKnown"); got.Kind() != canonjson.Bool || got.Bool() {
		t.Errorf("spentTotal.usdKnown %v, want false:\n%s", got, out)
	}
	if got := member(total, "usd"); got.Kind() != canonjson.Null {
		t.Errorf("spentTotal.usd %v, want null (no dollars reported or charged):\n%s", got, out)
	}
	usdGaps := map[string]string{}
	for _, g := range member(res, "spendGaps").Items() {
		for _, ch := range member(g, "channels").Items() {
			if ch.Str() == "usd" {
				usdGaps[member(g, "id").Str()] = member(g, "kind").Str()
			}
		}
	}
	if usdGaps["taint:s1"] != "unreported" {
		t.Errorf("usd gaps %v, want alpha (taint:s1) unreported:\n%s", usdGaps, out)
	}
	if _, named := usdGaps["taint:s2"]; named {
		t.Errorf("usd gaps %v name beta, which never ran:\n%s", usdGaps, out)
	}
}

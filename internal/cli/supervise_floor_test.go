package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// Spec §6, §7 rules 2 and 10: beta's stream reports usage (1400 prompt
// + 300 completion) and then fails in-band. What beta spent is not
// complete (a floor), so the run charges its ceiling — but never less
// than the 1700 tokens beta is known to have spent at least: the charge
// is a bound on the truth, and a ceiling below a measured floor is not
// one.
func TestSuperviseFailedWorkerChargedAtLeastItsFloor(t *testing.T) {
	const ceiling = 1000
	e := newCostEndpoint(t, "alpha", "beta")
	e.reply = func(w http.ResponseWriter, _ *http.Request, worker string, n int) bool {
		if worker != "beta" {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, v := range []any{
			map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "beta: DO"}, "finish_reason": nil}}},
			map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer", "choices": []any{},
				"usage": map[string]any{"prompt_tokens": 1400, "completion_tokens": 300, "total_tokens": 1700}},
			map[string]any{"error": map[string]any{"message": "the model is overloaded", "type": "server_error"}},
		} {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		return true
	}
	db, dir := filepath.Join(t.TempDir(), "runs.db"), t.TempDir()
	res, out, _ := superviseOverHTTP(t, e, db, "--run-dir", dir)
	e.mu.Lock()
	known := e.reportedIn + e.reportedOut // the manager's and alpha's
	e.mu.Unlock()
	var beta canonjson.Value
	for _, n := range member(member(res, "tree"), "nodes").Items() {
		if member(n, "id").Str() == "costs:s2" {
			beta = member(n, "spent")
		}
	}
	t.Logf("beta's tree spent: %s", canonjson.Marshal(beta))
	if got := charged(t, member(member(beta, "tokens"), "total")); got < 1700 {
		t.Errorf("beta charged %v tokens, below the 1700 it reported before failing:\n%s", got, out)
	}
	if got := int64(member(member(member(res, "spent"), "charged"), "tokens").Float()); got < known+1700 {
		t.Errorf("charged tokens %d, below the %d reported by the manager and alpha plus beta's 1700 (ceiling %d):\n%s", got, known, ceiling, out)
	}
	for _, w := range member(res, "workers").Items() {
		v, _ := w.Get("budgetViolation")
		if want := `{"overspent":[{"channel":"tokens","reserved":1000,"spent":1700}]}`; member(w, "id").Str() == "costs:s2" && string(canonjson.Marshal(v)) != want {
			t.Errorf("beta's budgetViolation %s, want %s (its floor is past its reservation)", canonjson.Marshal(v), want)
		}
	}
	if member(member(res, "spentTotal"), "tokensKnown").Bool() {
		t.Errorf("tokensKnown true, want false (beta's receipt is incomplete)")
	}
	// The journal keeps the floor: resuming the ended run reads the
	// same charge back.
	if j, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile)); err != nil || !strings.Contains(string(j), `"tokensFloor":1700`) {
		t.Errorf("the journal does not keep beta's floor (%v)", err)
	}
	mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
	again, errOut, _ := run(t, "", "supervise", mgr, "--worker", wrk, "--provider", "openai", "--base-url", e.URL+"/v1/",
		"--expect", "DONE", "--run-id", "costs", "--run-dir", dir, "--db", db, "--budget-tokens", "5000", "--worker-tokens", "1000",
		"--iterations", "4", "--resume", "--json")
	if strings.TrimSpace(again) == "" {
		t.Fatalf("resume: no result\n%s", errOut)
	}
	first, second := member(member(res, "spent"), "charged"), member(member(decode(t, again), "spent"), "charged")
	if string(canonjson.Marshal(first)) != string(canonjson.Marshal(second)) {
		t.Errorf("the resumed result charges %s, the run charged %s", canonjson.Marshal(second), canonjson.Marshal(first))
	}
}

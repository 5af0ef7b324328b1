package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// Spec §3.6 Settled budgetViolation, §6 reconcile: a worker whose one
// turn reports more tokens (4000 + 1046) than it reserved
// (--worker-tokens 1000) has overspent. That is an accounting fact, not
// an outcome change: alpha is still done and delivered, the run still
// wins, its measured 5046 tokens are charged in full (never clamped to
// the ceiling), and the overspend is named on alpha in workers[] and in
// its tree node as budgetViolation{overspent[{channel, reserved,
// spent}]}. beta, within its reservation, names none.
func TestSuperviseOverspendIsAFactNotAnOutcome(t *testing.T) {
	e := newCostEndpoint(t, "alpha", "beta")
	e.reply = func(w http.ResponseWriter, _ *http.Request, worker string, n int) bool {
		if worker != "alpha" {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, v := range []any{
			map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "alpha: DONE"}, "finish_reason": nil}}},
			map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}},
			map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer", "choices": []any{},
				"usage": map[string]any{"prompt_tokens": 4000, "completion_tokens": 1046, "total_tokens": 5046}},
		} {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return true
	}
	res, out, code := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"), "--budget-tokens", "20000")
	if code != 0 || member(res, "kind").Str() != "winner" {
		t.Fatalf("exit %d kind %q, want 0 and a winner (an overspend changes no outcome):\n%s", code, member(res, "kind").Str(), out)
	}
	e.mu.Lock()
	want := e.managerIn + e.managerOut + e.workIn + e.workOut + 5046
	e.mu.Unlock()
	if got := member(member(res, "spent"), "tokens"); got.Kind() != canonjson.Number || int64(got.Float()) != want {
		t.Errorf("spent tokens %v, want %d (alpha's 5046 in full):\n%s", got, want, out)
	}
	wantViolation := `{"overspent":[{"channel":"tokens","reserved":1000,"spent":5046}]}`
	for _, w := range member(res, "workers").Items() {
		id := member(w, "id").Str()
		v, has := w.Get("budgetViolation")
		switch {
		case id == "costs:s1" && (member(w, "state").Str() != "done" || !member(w, "delivered").Bool()):
			t.Errorf("alpha %s, want done and delivered", canonjson.Marshal(w))
		case id == "costs:s1" && (!has || string(canonjson.Marshal(v)) != wantViolation):
			t.Errorf("alpha's budgetViolation %s (present %v), want %s:\n%s", canonjson.Marshal(v), has, wantViolation, out)
		case id != "costs:s1" && has:
			t.Errorf("%s names a budgetViolation %s within its reservation", id, canonjson.Marshal(v))
		}
	}
	for _, n := range member(member(res, "tree"), "nodes").Items() {
		v, has := n.Get("budgetViolation")
		if member(n, "id").Str() == "costs:s1" && (!has || string(canonjson.Marshal(v)) != wantViolation) {
			t.Errorf("alpha's tree node budgetViolation %s (present %v), want %s", canonjson.Marshal(v), has, wantViolation)
		}
	}
}

package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// Spec §7 rules 1, 4, 7 and 10 over a real OpenAI-compatible endpoint.
// alpha's answer reports 40 prompt and 26 completion tokens, 20 of them
// reasoning (completion_tokens_details.reasoning_tokens), and the cost
// member a router such as OpenRouter sends (OpenAI's API defines none):
// its turn is 66 tokens, reasoning counted once, as output, and $0.0042,
// the router's receipt. beta's stream sends part of an answer, then
// an in-band error: beta fails (an in-band failure event fails the
// execution, partial text is never success), its tokens unreported and
// charged at its ceiling (--worker-tokens 1000), named in spendGaps. The
// result, the tree and agentrt runs show agree on alpha; no dollars are
// printed as a known 0.
func TestSuperviseReasoningAndInBandErrorAccounting(t *testing.T) {
	const ceiling = 1000
	e := newCostEndpoint(t, "alpha", "beta")
	e.reply = func(w http.ResponseWriter, _ *http.Request, worker string, n int) bool {
		if worker == "" {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		delta := func(d map[string]any, finish any) {
			chunk(map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer",
				"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}})
		}
		if worker == "beta" {
			delta(map[string]any{"role": "assistant", "content": "beta: DO"}, nil)
			chunk(map[string]any{"error": map[string]any{"message": "the model is overloaded", "type": "server_error"}})
			return true
		}
		delta(map[string]any{"role": "assistant", "content": "alpha: DONE"}, nil)
		delta(map[string]any{}, "stop")
		chunk(map[string]any{"id": fmt.Sprint("w", n), "object": "chat.completion.chunk", "model": "gpt-writer", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 40, "completion_tokens": 26, "total_tokens": 66, "cost": 0.0042,
				"completion_tokens_details": map[string]any{"reasoning_tokens": 20}}})
		fmt.Fprint(w, "data: [DONE]\n\n")
		return true
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	res, out, _ := superviseOverHTTP(t, e, db)
	e.mu.Lock()
	mgrTokens := e.managerIn + e.managerOut
	e.mu.Unlock()

	spent := member(res, "spent")
	if got := member(spent, "tokens"); got.Kind() != canonjson.Null {
		t.Errorf("spent tokens %v, want null (beta's unreported):\n%s", got, out)
	}
	if got, want := int64(member(member(spent, "charged"), "tokens").Float()), mgrTokens+66+ceiling; got != want {
		t.Errorf("charged tokens %d, want %d (manager %d + alpha 66 + beta's ceiling %d):\n%s", got, want, mgrTokens, ceiling, out)
	}
	total := member(res, "spentTotal")
	if member(total, "tokensKnown").Bool() || member(total, "usdKnown").Bool() {
		t.Errorf("spentTotal tokensKnown %v usdKnown %v, want both false:\n%s", member(total, "tokensKnown"), member(total, "usdKnown"), out)
	}
	if got := member(total, "usd"); got.Kind() == canonjson.Number && got.Float() == 0 {
		t.Errorf("spentTotal.usd is a known-looking 0:\n%s", out)
	}
	gaps := map[string]string{}
	for _, g := range member(res, "spendGaps").Items() {
		for _, ch := range member(g, "channels").Items() {
			if ch.Str() == "tokens" {
				gaps[member(g, "id").Str()] = member(g, "kind").Str()
			}
		}
	}
	if len(gaps) != 1 || gaps["costs:s2"] != "unreported" {
		t.Errorf("token gaps %v, want beta (costs:s2) unreported only:\n%s", gaps, out)
	}
	for _, w := range member(res, "workers").Items() {
		if member(w, "id").Str() == "costs:s2" && (member(w, "state").Str() != "failed" || member(w, "delivered").Bool() ||
			!strings.Contains(member(w, "reason").Str(), "overloaded")) {
			t.Errorf("beta %s, want failed naming the in-band error, not delivered:\n%s", canonjson.Marshal(w), out)
		}
	}
	for _, n := range member(member(res, "tree"), "nodes").Items() {
		if member(n, "id").Str() != "costs:s1" {
			continue
		}
		if got := member(member(member(n, "spent"), "tokens"), "total"); int64(got.Float()) != 66 {
			t.Errorf("alpha's tree spent tokens %v, want 66 (reasoning inside the completion's 26)", got)
		}
	}
	shown, showErr, code := run(t, "", "runs", "show", "costs", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("runs show costs: exit %d\n%s%s", code, shown, showErr)
	}
	for _, w := range member(member(decode(t, shown), "record"), "workers").Items() {
		if member(w, "id").Str() != "costs:s1" {
			continue
		}
		wout, werr, code := run(t, "", "runs", "show", member(w, "execution").Str(), "--db", db, "--json")
		if code != 0 {
			t.Fatalf("runs show alpha: exit %d\n%s%s", code, wout, werr)
		}
		spend := member(decode(t, wout), "spend")
		for name, want := range map[string]float64{"inputTokens": 40, "outputTokens": 26, "reasoningTokens": 20, "costUsd": 0.0042} {
			if got := member(spend, name); got.Kind() != canonjson.Number || got.Float() != want {
				t.Errorf("alpha's run ledgers %s %v, want %v: %s", name, got, want, canonjson.Marshal(spend))
			}
		}
	}
}

package kernel_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// TestToolLoopServedModel: a turn's report of its served model is kept,
// and one that differs from the requested model fails the loop before
// the turn's calls run (spec runtime §2.3's served-model rule; no report
// is unknown, not a failure).
func TestToolLoopServedModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested string
		turns     []scripted.ChatTurn
		served    []string
		mismatch  bool
		toolRuns  int64
	}{
		{"reported and equal", "gpt-5.2",
			[]scripted.ChatTurn{turn(scripted.Served("gpt-5.2"), scripted.Call("c1", "echo", `{}`)), turn(scripted.Served("gpt-5.2"), scripted.Text("ok"))},
			[]string{"gpt-5.2"}, false, 1},
		{"a known provider prefix", "claude-x",
			[]scripted.ChatTurn{turn(scripted.Served("openrouter/anthropic/claude-x"), scripted.Text("ok"))},
			[]string{"openrouter/anthropic/claude-x"}, false, 0},
		{"not reported: unknown, not a failure", "gpt-5.2",
			[]scripted.ChatTurn{turn(scripted.Call("c1", "echo", `{}`)), answer("ok")},
			nil, false, 1},
		{"another model on the first turn", "gpt-5.2",
			[]scripted.ChatTurn{turn(scripted.Served("gpt-5.3"), scripted.Text("unused"), scripted.Call("c1", "echo", `{}`), scripted.Usage(10, 2, contract.UsageDelta)), answer("never")},
			[]string{"gpt-5.3"}, true, 0},
		{"another model on a later turn", "gpt-5.2",
			[]scripted.ChatTurn{turn(scripted.Served("gpt-5.2"), scripted.Call("c1", "echo", `{}`)), turn(scripted.Served("gpt-5.2-mini"), scripted.Call("c2", "echo", `{}`)), answer("never")},
			[]string{"gpt-5.2", "gpt-5.2-mini"}, true, 1},
		{"nothing requested: every report kept", "",
			[]scripted.ChatTurn{turn(scripted.Served("a"), scripted.Call("c1", "echo", `{}`)), turn(scripted.Served("b"), scripted.Text("ok"))},
			[]string{"a", "b"}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			st := memory.New(nil)
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
				Model: model(tc.turns...), Tools: []contract.Tool{echoTool("echo", &runs)},
				RequestedModel: tc.requested, Store: st, RunID: "served",
			})
			if diff := cmp.Diff(tc.served, res.ServedModels); diff != "" {
				t.Errorf("ServedModels (-want +got):\n%s", diff)
			}
			if runs.Load() != tc.toolRuns {
				t.Errorf("tool runs %d, want %d", runs.Load(), tc.toolRuns)
			}
			run, gerr := st.GetRun(context.Background(), "served")
			if gerr != nil {
				t.Fatal(gerr)
			}
			doc, _ := canonjson.Canonical(run.Doc)
			if tc.mismatch {
				var re *kernel.RunError
				if !errors.As(err, &re) || re.Reason != kernel.ReasonModelMismatch || res.StopReason != kernel.StopFailed || run.Status != store.StatusFailed {
					t.Fatalf("err %v, stop %s, status %s; want a served-model-mismatch failure", err, res.StopReason, run.Status)
				}
				if strings.Contains(res.FinalText, "unused") || len(res.Pending) != 0 {
					t.Errorf("the mismatched turn was used: text %q, pending %v", res.FinalText, res.Pending)
				}
				if tc.name == "another model on the first turn" && res.Usage.InputTokens.String() != "10" {
					t.Errorf("the mismatched turn's spent tokens are lost: input %s", res.Usage.InputTokens)
				}
				return
			}
			if err != nil || res.StopReason != kernel.StopCompleted || run.Status != store.StatusCompleted {
				t.Fatalf("err %v, stop %s, status %s", err, res.StopReason, run.Status)
			}
			if len(tc.served) > 0 && !strings.Contains(string(doc), `"servedModels":["`+tc.served[0]) {
				t.Errorf("the run document does not record the served models: %s", doc)
			}
			if len(tc.served) == 0 && strings.Contains(string(doc), "servedModels") {
				t.Errorf("a run whose served model is unknown records one: %s", doc)
			}
		})
	}
}

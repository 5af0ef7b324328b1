package delegation_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/kernel"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// callTool runs one of q's tools on args and returns its answer as
// JSON-decoded members.
func callTool(t *testing.T, ctx context.Context, q *delegation.Queue, name, args string) map[string]any {
	t.Helper()
	ts, err := q.Tools()
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonjson.Decode([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if tl.Name != name {
			continue
		}
		out, err := tl.Run(ctx, v)
		if err != nil {
			t.Fatalf("%s(%s): %v", name, args, err)
		}
		var m map[string]any
		if err := json.Unmarshal(canonjson.Marshal(out), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// TestDelegateAnswersLikeSection9: spec/runtime.md §9 delegate{intent,
// runId?} is synchronous and answers {status: winner, out, outRef,
// spentTotal} or {status: no-winner, reason, error?, spentTotal} at the
// top level, with taskId, reused, state and the record; waitSeconds 0
// answers at once with the state as the status; a delegation ended
// without a run's result is no-winner with its spend unknown (null).
func TestDelegateAnswersLikeSection9(t *testing.T) {
	ctx := deadline(t)

	t.Run("winner by default", func(t *testing.T) {
		q := open(t, newFixture(t, storememory.New(nil)).config(t))
		got := callTool(t, ctx, q, delegation.ToolDelegate, `{"intent": "write alpha", "runId": "trace-42"}`)
		out, _ := got["out"].(string)
		if got["status"] != delegation.StatusWinner || got["state"] != "completed" || !strings.Contains(out, "DONE") || got["reused"] != false {
			t.Fatalf("answer %v", got)
		}
		if _, ok := got["outRef"].(string); !ok {
			t.Errorf("outRef %v, want the output's address", got["outRef"])
		}
		spent, _ := got["spentTotal"].(map[string]any)
		if spent["tokens"] != float64(30) || spent["usd"] != nil {
			t.Errorf("spentTotal %v: want tokens 30 and usd unknown (null)", spent)
		}
		for _, k := range []string{"reason", "error"} {
			if _, ok := got[k]; ok {
				t.Errorf("a winner carries %s: %v", k, got)
			}
		}
		rec, _ := got["delegation"].(map[string]any)
		if rec["runId"] != "trace-42" || rec["intent"] != "write alpha" || rec["taskId"] != got["taskId"] {
			t.Errorf("record %v", rec)
		}
	})

	t.Run("no-winner when the check never passes", func(t *testing.T) {
		f := newFixture(t, storememory.New(nil))
		cfg := f.config(t)
		cfg.Deliverable.Check = func(context.Context, supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: false, Reason: "never"}, nil
		}
		q := open(t, cfg)
		got := callTool(t, ctx, q, delegation.ToolDelegate, `{"intent": "write alpha"}`)
		if got["status"] != delegation.StatusNoWinner || got["state"] != "failed" || got["reason"] == "" || got["reason"] == nil {
			t.Fatalf("answer %v", got)
		}
		if _, ok := got["out"]; ok {
			t.Errorf("a no-winner carries out: %v", got)
		}
		if spent, _ := got["spentTotal"].(map[string]any); spent == nil {
			t.Errorf("spentTotal %v, want the run's spend", got["spentTotal"])
		}
	})

	t.Run("waitSeconds 0 answers at once; cancelled is no-winner with unknown spend", func(t *testing.T) {
		f := newFixture(t, storememory.New(nil))
		cfg := f.config(t)
		cfg.Brain = holdingBrain
		q := open(t, cfg)
		start := time.Now()
		got := callTool(t, ctx, q, delegation.ToolDelegate, `{"intent": "write alpha", "waitSeconds": 0}`)
		if el := time.Since(start); el > 30*time.Second {
			t.Errorf("waitSeconds 0 took %s", el)
		}
		if s := got["status"]; s != "pending" && s != "running" || got["status"] != got["state"] {
			t.Fatalf("answer %v", got)
		}
		if _, ok := got["spentTotal"]; ok {
			t.Errorf("a live delegation carries spentTotal: %v", got)
		}
		id := got["taskId"].(string)
		waitFor(t, ctx, "the delegation to run", func() bool { return must(q.Get(ctx, id))(t).State == delegation.StateRunning })
		if _, _, err := q.Cancel(ctx, id, "no longer needed"); err != nil {
			t.Fatal(err)
		}
		d := must(q.Get(ctx, id))(t)
		ans := delegation.Outcome(d, false)
		if ans.Status != delegation.StatusNoWinner || ans.Reason != delegation.ReasonCancelled || ans.Error == nil || !strings.Contains(ans.Error.Message, "no longer needed") {
			t.Errorf("outcome %+v", ans)
		}
		raw, err := json.Marshal(delegation.Outcome(delegation.Delegation{TaskID: id, State: delegation.StateInterrupted, Failure: "no journal"}, false))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if v, present := m["spentTotal"]; !present || v != nil || m["reason"] != delegation.ReasonInterrupted {
			t.Errorf("an interrupted delegation: %s; want spentTotal null (unknown) and reason interrupted", raw)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		q := open(t, newFixture(t, storememory.New(nil)).config(t))
		for _, c := range []struct{ args, code, path string }{
			{`{"intent": " "}`, delegation.CodeInvalidArguments, "/intent"},
			{`{"intent": "x", "runId": "a/b"}`, delegation.CodeInvalidArguments, "/runId"},
			{`{"intent": "x", "waitSeconds": 601}`, delegation.CodeInvalidArguments, "/waitSeconds"},
			{`{"intent": "x", "waitSeconds": -1}`, delegation.CodeInvalidArguments, "/waitSeconds"},
		} {
			got := callTool(t, ctx, q, delegation.ToolDelegate, c.args)
			if got["error"] != c.code || got["path"] != c.path {
				t.Errorf("%s: %v, want %s at %s", c.args, got, c.code, c.path)
			}
		}
	})
}

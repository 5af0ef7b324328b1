package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/tools"
)

// §3.6 and the reference: a question's options are {label, tradeoff}[].
// ask_parent takes that form and plain strings (a label with no
// tradeoff), a question journaled with string options still reads, and
// a question is written in the spec's form.
func TestQuestionOptionsTakeLabelAndTradeoff(t *testing.T) {
	var a supervise.AskArgs
	if err := json.Unmarshal([]byte(`{"level": "worker", "question": "which?", "reason": "r", "urgency": "blocks-step",
		"options": ["red", {"label": "blue", "tradeoff": "costs more"}]}`), &a); err != nil {
		t.Fatal(err)
	}
	want := []supervise.QuestionOption{{Label: "red"}, {Label: "blue", Tradeoff: "costs more"}}
	if diff := cmp.Diff(want, a.Options); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	var old supervise.Question
	if err := json.Unmarshal([]byte(`{"id": "q1", "from": "r:s1", "level": "worker", "question": "which?", "reason": "r",
		"urgency": "blocks-step", "options": ["red", "blue"], "status": "open"}`), &old); err != nil {
		t.Fatalf("a question journaled with string options: %v", err)
	}
	b, _ := json.Marshal(old.Options)
	if got := string(b); got != `[{"label":"red","tradeoff":""},{"label":"blue","tradeoff":""}]` {
		t.Errorf("options written as %s", got)
	}
	for _, bad := range []string{`[{"label": "x", "cost": 1}]`, `[{"tradeoff": "t"}]`, `[3]`} {
		var o []supervise.QuestionOption
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("options %s decoded", bad)
		}
	}
}

// The ask_parent tool's schema takes both forms, and list_questions
// shows each option's label and tradeoff; the bounds count tradeoffs.
func TestListQuestionsShowsOptionTradeoffs(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say",
			Urgency: supervise.UrgencyBlocksRun, Options: []supervise.QuestionOption{{Label: "red", Tradeoff: "cheap"}, {Label: "blue", Tradeoff: "slow"}}})
		if err != nil {
			return supervise.WorkResult{Spent: spent}, err
		}
		return supervise.WorkResult{Text: d.Answer + " DONE", Spent: spent}, nil
	})
	o := baseOptions(t, exec, nil)
	var listed map[string]any
	var checkErrs []error
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		ts, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range ts {
			if tl.Name != supervise.ToolPrefix+supervise.VerbAskParent {
				continue
			}
			v, _ := tools.NewValidator(tl)
			for _, args := range []string{
				`{"level": "worker", "question": "q", "reason": "r", "urgency": "blocks-step", "options": ["a", {"label": "b", "tradeoff": "t"}]}`,
			} {
				a, _ := canonjson.Decode([]byte(args))
				checkErrs = append(checkErrs, v.Check(a))
			}
		}
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		listed = tool(t, ctx, c, supervise.VerbListQuestions, map[string]any{})
		tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if len(checkErrs) != 1 || checkErrs[0] != nil {
		t.Errorf("ask_parent's schema on string and {label, tradeoff} options: %v", checkErrs)
	}
	qs, _ := listed["questions"].([]any)
	if len(qs) != 1 {
		t.Fatalf("list_questions %v", listed)
	}
	got := qs[0].(map[string]any)["options"]
	want := []any{map[string]any{"label": "red", "tradeoff": "cheap"}, map[string]any{"label": "blue", "tradeoff": "slow"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list_questions options (-want +got):\n%s", diff)
	}
	big := make([]byte, supervise.MaxQuestionBytes)
	_, err := (&supervise.Coordinator{}).AskParent(context.Background(), supervise.AskArgs{Level: "worker", Question: "q", Reason: "r",
		Urgency: supervise.UrgencyBlocksStep, Options: []supervise.QuestionOption{{Label: "a", Tradeoff: string(big)}}})
	var r *supervise.VerbRefusal
	if !errors.As(err, &r) || r.Code != "invalid-question" {
		t.Errorf("a tradeoff past MaxQuestionBytes: %v, want refused invalid-question", err)
	}
}

// §3.6: an option is journaled as {label, tradeoff} — the coordination
// log and a store spawn journal write through canonjson, not
// encoding/json — and a journaled option reads back from that form, a
// plain label, or the {"Label", "Tradeoff"} this package journaled
// before options had a journaled shape of their own.
func TestQuestionOptionJournaledShape(t *testing.T) {
	v, err := canonjson.ToValue(supervise.Question{ID: "q1", Options: []supervise.QuestionOption{{Label: "red", Tradeoff: "cheap"}}})
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := v.Get("options")
	if got := string(canonjson.Marshal(opts)); got != `[{"label":"red","tradeoff":"cheap"}]` {
		t.Errorf("journaled options %s", got)
	}
	for _, tc := range []struct {
		in   string
		want supervise.QuestionOption
		bad  bool
	}{
		{in: `{"label":"red","tradeoff":"cheap"}`, want: supervise.QuestionOption{Label: "red", Tradeoff: "cheap"}},
		{in: `{"label":"red"}`, want: supervise.QuestionOption{Label: "red"}},
		{in: `"red"`, want: supervise.QuestionOption{Label: "red"}},
		{in: `{"Label":"red","Tradeoff":"cheap"}`, want: supervise.QuestionOption{Label: "red", Tradeoff: "cheap"}},
		{in: `{"tradeoff":"t"}`, bad: true},
		{in: `{"label":"x","cost":1}`, bad: true},
		{in: `3`, bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := canonjson.Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got supervise.QuestionOption
			err = canonjson.FromValue(v, &got)
			switch {
			case tc.bad && err == nil:
				t.Errorf("decoded as %+v", got)
			case !tc.bad && err != nil:
				t.Error(err)
			case !tc.bad && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

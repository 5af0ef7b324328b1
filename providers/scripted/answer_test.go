package scripted_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// A text step after an interaction says what it resolved with:
// {{outcome:ID}} the outcome, {{answer:ID.FIELD}} an accepted answer —
// choices joined, numbers and booleans written out, a secret never —
// and "" for what is unresolved, unanswered or unknown.
func TestTextStepSaysWhatAnInteractionResolvedWith(t *testing.T) {
	s, err := scripted.ParseScript([]byte(`{"turns": [{"repeat": true, "steps": [
	  {"text": "[{{outcome:q}}|{{answer:q.pick}}] "},
	  {"interaction": {"request": {"id": "q", "kind": "question", "title": "Which?", "answerSpec": {"fields": [
	    {"type": "select", "name": "pick", "label": "Pick", "multi": true, "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]},
	    {"type": "number", "name": "n", "label": "N"}, {"type": "boolean", "name": "ok", "label": "OK"},
	    {"type": "secret", "name": "token", "label": "Token"}]}}}},
	  {"text": "{{outcome:q}} {{answer:q.pick}} {{answer:q.n}} {{answer:q.ok}} [{{answer:q.token}}] [{{answer:q.none}}] [{{answer:zz.pick}}]"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		resp func(id string) contract.InteractionResponse
		want string
	}{
		{"accepted", func(id string) contract.InteractionResponse {
			return contract.InteractionResponse{ID: id, Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{
				"pick": contract.ChoiceAnswer("a", "b"), "n": contract.NumberAnswer(2.5), "ok": contract.BooleanAnswer(true),
				"token": contract.SecretAnswer("handle-1")}}
		}, "[|] accepted a, b 2.5 true [] [] []"},
		{"declined", func(id string) contract.InteractionResponse {
			return contract.InteractionResponse{ID: id, Outcome: contract.InteractionOutcomeDeclined}
		}, "[|] declined    [] [] []"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env, err := scripted.New(s, scripted.Options{}).Create(ctx, &contract.CreateInput{})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Destroy(ctx)
			var text strings.Builder
			for e, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr("go")}) {
				if err != nil {
					t.Fatal(err)
				}
				if n := e.Normalized; n != nil && n.Interaction != nil {
					req := n.Interaction.Request
					cmd, err := contract.NewInteractionResponseCommand("op", req.ResponseBinding(), tc.resp(req.ID))
					if err != nil {
						t.Fatal(err)
					}
					if ack, err := env.(contract.InteractionResponder).RespondToInteraction(ctx, cmd); err != nil || ack.Status != contract.InteractionAckAccepted {
						t.Fatalf("answer: %+v, %v", ack, err)
					}
				}
				if d, ok := e.Data["delta"]; ok {
					text.WriteString(d.Str())
				}
			}
			if text.String() != tc.want {
				t.Errorf("text %q, want %q", text.String(), tc.want)
			}
		})
	}
}

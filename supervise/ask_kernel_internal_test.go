package supervise

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
)

// questionRequest is a valid, bound question request of fields.
func questionRequest(t testing.TB, title string, allowed []contract.InteractionOutcome, fields ...contract.InteractionField) (*contract.InteractionRequest, error) {
	t.Helper()
	return contract.NewInteractionRequest(contract.InteractionRequest{ID: "q", Kind: contract.InteractionKindQuestion, Title: title,
		AnswerSpec: contract.InteractionAnswerSpec{Fields: fields}, AllowedOutcomes: allowed,
		Binding: contract.InteractionRequestBinding{RunID: "run", Provider: "scripted", EnvironmentID: "env", SessionID: "s", ExecutionID: "x", InteractionID: "q"}})
}

func yes() *bool { b := true; return &b }

// The manager's decision as the response to a worker's question
// request: an answer fills the request's answer field — a select by
// option value or label, a write-in only where allowed, a number, a
// boolean — and an answer that does not fit, a deferral or an
// escalation declines it (cancelled where declined is not allowed).
func TestResponseOfDecision(t *testing.T) {
	colour := contract.InteractionField{Type: contract.InteractionFieldTypeSelect, Name: "colour", Label: "Colour", Required: yes(),
		Options: []contract.InteractionFieldOption{{Value: "red", Label: "Red"}, {Value: "blue", Label: "Deep blue"}}}
	custom := colour
	custom.AllowCustom = yes()
	text := contract.InteractionField{Type: contract.InteractionFieldTypeText, Name: "why", Label: "Why"}
	number := contract.InteractionField{Type: contract.InteractionFieldTypeNumber, Name: "n", Label: "N", Required: yes()}
	boolean := contract.InteractionField{Type: contract.InteractionFieldTypeBoolean, Name: "ok", Label: "OK", Required: yes()}
	secret := contract.InteractionField{Type: contract.InteractionFieldTypeSecret, Name: "token", Label: "Token", Required: yes()}
	answer := func(s string) Decision { return Decision{Kind: "answer", Answer: s} }
	declined := contract.InteractionResponse{ID: "q", Outcome: contract.InteractionOutcomeDeclined}
	accepted := func(data contract.InteractionData) contract.InteractionResponse {
		return contract.InteractionResponse{ID: "q", Outcome: contract.InteractionOutcomeAccepted, Data: data}
	}
	cases := []struct {
		name    string
		fields  []contract.InteractionField
		allowed []contract.InteractionOutcome
		d       Decision
		want    contract.InteractionResponse
	}{
		{"select by value", []contract.InteractionField{text, colour}, nil, answer("red"), accepted(contract.InteractionData{"colour": contract.ChoiceAnswer("red")})},
		{"select by label", []contract.InteractionField{colour}, nil, answer(" deep BLUE "), accepted(contract.InteractionData{"colour": contract.ChoiceAnswer("blue")})},
		{"select, no such option", []contract.InteractionField{colour}, nil, answer("green"), declined},
		{"select, write-in allowed", []contract.InteractionField{custom}, nil, answer("green"), accepted(contract.InteractionData{"colour": contract.ChoiceAnswer("green")})},
		{"text", []contract.InteractionField{text}, nil, answer("because"), accepted(contract.InteractionData{"why": contract.TextAnswer("because")})},
		{"number", []contract.InteractionField{number}, nil, answer("3.5"), accepted(contract.InteractionData{"n": contract.NumberAnswer(3.5)})},
		{"not a number", []contract.InteractionField{number}, nil, answer("many"), declined},
		{"boolean", []contract.InteractionField{boolean}, nil, answer("Yes"), accepted(contract.InteractionData{"ok": contract.BooleanAnswer(true)})},
		{"no fields", nil, nil, answer("fine"), accepted(nil)},
		{"a required secret is never the manager's", []contract.InteractionField{secret}, nil, answer("hunter2"), declined},
		{"defer", []contract.InteractionField{colour}, nil, Decision{Kind: "defer", DeferReason: "later"}, declined},
		{"escalate", []contract.InteractionField{colour}, nil, Decision{Kind: "escalate", EscalateTo: "user"}, declined},
		{"declined not allowed", []contract.InteractionField{colour},
			[]contract.InteractionOutcome{contract.InteractionOutcomeAccepted, contract.InteractionOutcomeCancelled},
			Decision{Kind: "defer", DeferReason: "later"}, contract.InteractionResponse{ID: "q", Outcome: contract.InteractionOutcomeCancelled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := questionRequest(t, "Which?", tc.allowed, tc.fields...)
			if err != nil {
				t.Fatal(err)
			}
			got := responseOf(req, tc.d)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if ok, errs := contract.ValidateInteractionResponse(req, &got); !ok {
				t.Errorf("the response does not satisfy the request: %v", errs)
			}
		})
	}
}

// A request at the contract's size limits still makes a question within
// MaxQuestionBytes: its text clipped, options offered only when they fit.
func TestAskArgsOfHugeRequestIsBounded(t *testing.T) {
	var opts []contract.InteractionFieldOption
	for i := range 60 {
		v := strings.Repeat(string(rune('a'+i%26)), 500) + string(rune('A'+i/26))
		opts = append(opts, contract.InteractionFieldOption{Value: v, Label: v})
	}
	body := strings.Repeat("b", contract.MaxStringLength)
	req, err := questionRequest(t, strings.Repeat("t", contract.MaxStringLength), nil,
		contract.InteractionField{Type: contract.InteractionFieldTypeSelect, Name: "pick", Label: "Pick", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	req.Body = &body
	q := askArgsOf(req)
	if err := q.check(); err != nil {
		t.Fatalf("the question of a valid request is refused: %v", err)
	}
	if len(q.Options) != 0 {
		t.Errorf("%d options of 30 kB offered past the bound", len(q.Options))
	}
}

// FuzzKernelQuestionResponse: any valid question request a provider
// raises makes a valid question, and any answer the manager gives makes
// a response that satisfies the request — or, only where the request
// allows neither declined nor cancelled, a declined one.
func FuzzKernelQuestionResponse(f *testing.F) {
	f.Add("Which colour?", uint8(3), "red|blue", "Blue", false)
	f.Add("How many?", uint8(1), "", "3", true)
	f.Add("OK?", uint8(2), "", "no", false)
	f.Add("Why?", uint8(0), "", strings.Repeat("x", 100), true)
	f.Fuzz(func(t *testing.T, title string, kind uint8, options, answer string, strict bool) {
		types := []contract.InteractionFieldType{contract.InteractionFieldTypeText, contract.InteractionFieldTypeNumber,
			contract.InteractionFieldTypeBoolean, contract.InteractionFieldTypeSelect, contract.InteractionFieldTypeSecret}
		field := contract.InteractionField{Type: types[int(kind)%len(types)], Name: "f", Label: "F", Required: yes()}
		if field.Type == contract.InteractionFieldTypeSelect {
			for o := range strings.SplitSeq(options, "|") {
				field.Options = append(field.Options, contract.InteractionFieldOption{Value: o, Label: o})
			}
		}
		var allowed []contract.InteractionOutcome
		if strict {
			allowed = []contract.InteractionOutcome{contract.InteractionOutcomeAccepted}
		}
		req, err := questionRequest(t, title, allowed, field)
		if err != nil {
			return // not a request a provider could raise
		}
		if err := askArgsOf(req).check(); err != nil {
			t.Fatalf("the question of a valid request is refused: %v", err)
		}
		for _, d := range []Decision{{Kind: "answer", Answer: answer}, {Kind: "defer", DeferReason: answer}} {
			resp := responseOf(req, d)
			if ok, errs := contract.ValidateInteractionResponse(req, &resp); !ok && !(strict && resp.Outcome == contract.InteractionOutcomeDeclined) {
				t.Fatalf("response %+v does not satisfy the request: %v", resp, errs)
			}
		}
	})
}

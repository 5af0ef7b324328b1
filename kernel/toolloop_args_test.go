package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/tools"
	"github.com/agentrt/agentrt/workspace"
	wsmemory "github.com/agentrt/agentrt/workspace/memory"
)

type transfer struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int    `json:"amount"`
	Memo   string `json:"memo,omitempty"`
}

// Issue 18 "done when": a call whose arguments violate the tool's schema
// is never executed, and the model sees why in the tool message — for a
// typed tool (schema inferred from its Go input type) and for a
// hand-written tool with an InputSchema alike.
func TestToolLoopNeverRunsInvalidArguments(t *testing.T) {
	var typedRuns, handRuns atomic.Int64
	typed := tools.Must(tools.NewTool("transfer", "Move money between accounts.", func(ctx context.Context, in transfer) (string, error) {
		typedRuns.Add(1)
		return fmt.Sprintf("moved %d from %s to %s", in.Amount, in.From, in.To), nil
	}))
	schema, err := canonjson.Decode([]byte(`{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}`))
	if err != nil {
		t.Fatal(err)
	}
	hand := contract.Tool{Name: "order", InputSchema: schema, Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		handRuns.Add(1)
		return canonjson.StringValue("ordered"), nil
	}}
	tests := []struct {
		name, tool, args string
		want             string // the tool message the model sees next turn
	}{
		{"typed, valid", "transfer", `{"from":"a","to":"b","amount":5}`,
			`- transfer → ok: "moved 5 from a to b"`},
		{"typed, missing member", "transfer", `{"from":"a","to":"b"}`,
			`- transfer → failed (invalid_arguments): the arguments do not match the input schema: required: missing properties: ["amount"]`},
		{"typed, wrong type", "transfer", `{"from":"a","to":"b","amount":"all of it"}`,
			`- transfer → failed (invalid_arguments): the arguments at /amount do not match the input schema: type: all of it has type "string", want "integer"`},
		{"typed, unknown member", "transfer", `{"from":"a","to":"b","amount":5,"fee":0}`,
			`- transfer → failed (invalid_arguments): the arguments do not match the input schema: unexpected additional properties ["fee"]`},
		{"hand-written, valid", "order", `{"sku":"A-1","qty":2}`,
			`- order → ok: "ordered"`},
		{"hand-written, below minimum", "order", `{"sku":"A-1","qty":0}`,
			`- order → failed (invalid_arguments): the arguments at /qty do not match the input schema: minimum: 0/1 is less than 1.000000`},
		{"hand-written, not an object", "order", `["A-1"]`,
			`- order → failed (invalid_arguments): the arguments are a JSON array, not a JSON object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typedRuns.Store(0)
			handRuns.Store(0)
			var seen string
			m := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				{Events: []contract.ChatEvent{scripted.Call("c1", tc.tool, tc.args)}},
				{Events: []contract.ChatEvent{scripted.Text("done")}, Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error {
					last := msgs[len(msgs)-1]
					if last.Role != contract.ChatTool || last.ToolCallID != "c1" || last.Content == nil {
						return errors.New("the turn after the call does not end on its tool message")
					}
					seen = *last.Content
					return nil
				}},
			}})
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "go", Tools: []contract.Tool{typed, hand}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, seen); diff != "" {
				t.Errorf("the model saw (-want +got):\n%s", diff)
			}
			valid := strings.Contains(tc.want, "→ ok")
			if runs := typedRuns.Load() + handRuns.Load(); runs != 0 && !valid || runs != 1 && valid {
				t.Errorf("the tools ran %d times; want %d", runs, map[bool]int{true: 1}[valid])
			}
			if out := res.ToolResults[0].Outcome; out.OK != valid || !valid && out.Code != kernel.CodeInvalidArguments {
				t.Errorf("outcome %+v", out)
			}
		})
	}
}

// An InputSchema that does not compile is refused before the model is
// called, naming the tool's field.
func TestToolLoopRefusesUncompilableSchema(t *testing.T) {
	bad, err := canonjson.Decode([]byte(`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := model(answer("never"))
	ok := echoTool("fine", new(atomic.Int64))
	broken := echoTool("broken", new(atomic.Int64))
	broken.InputSchema = bad
	_, err = kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{ok, broken}})
	oe, isOptions := errors.AsType[*kernel.OptionsError](err)
	if !errors.Is(err, kernel.ErrInvalidOptions) || !isOptions || oe.Field != "Tools[1].InputSchema" {
		t.Errorf("err %v, want an *OptionsError naming Tools[1].InputSchema", err)
	}
	if m.Calls() != 0 {
		t.Errorf("the model was called %d times", m.Calls())
	}
}

// The workspace's hand-written tool schemas compile, so those tools keep
// running in a loop, each call checked against its schema.
func TestWorkspaceToolSchemasCompile(t *testing.T) {
	st := wsmemory.New(time.Now)
	all := append(workspace.MemoryTools(st, workspace.DefaultMemoryPolicy(nil)), workspace.FileTools(st, nil)...)
	for _, tl := range all {
		if _, err := tools.NewValidator(tl); err != nil {
			t.Errorf("%s: %v", tl.Name, err)
		}
	}
	if len(all) == 0 {
		t.Fatal("no workspace tools")
	}
}

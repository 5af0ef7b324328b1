package scripted_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

func hello() *scripted.Script {
	s, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[
		{"text":"Hello."},{"usage":{"inputTokens":12,"outputTokens":3},"mode":"delta"}]}]}`))
	if err != nil {
		panic(err)
	}
	return s
}

// liar denies durable branching it implements.
type liar struct{ *scripted.Provider }

func (l liar) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c, err := l.Provider.Capabilities(ctx)
	c.Branching = contract.BranchingCapabilities{Checkpoint: true, Fork: true}
	return c, err
}

// hiderEnv implements none of the abilities the provider declares.
type hiderEnv struct{ contract.Environment }

func ptr[T any](v T) *T { return &v }

// Issue 3 "Done when": a deliberately wrong provider fails capability
// exposure, in either direction.
func TestExposureCatchesLiars(t *testing.T) {
	ctx := context.Background()
	p := scripted.New(hello(), scripted.Options{})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	lying := liar{p}
	c, _ := lying.Capabilities(ctx)
	if err := contract.CheckProviderExposure(c, lying); err == nil {
		t.Error("a provider implementing BranchingProvider without declaring durable branching passed")
	}
	if err := contract.CheckExposure(c, env); err == nil {
		t.Error("an environment implementing DurableBrancher without the declaration passed")
	}
	honest, _ := p.Capabilities(ctx)
	if err := contract.CheckExposure(honest, hiderEnv{env}); err == nil {
		t.Error("an environment missing every declared ability passed")
	}
	if err := contract.CheckExposure(honest, env); err != nil {
		t.Errorf("the honest environment failed: %v", err)
	}
	if err := contract.CheckProviderExposure(honest, p); err != nil {
		t.Errorf("the honest provider failed: %v", err)
	}
}

// The default script answers with the prompt it was given, so a run with
// no script still shows the task flowed through to the provider.
func TestDefaultScriptEchoesPrompt(t *testing.T) {
	ctx := context.Background()
	p := scripted.New(scripted.DefaultScript(), scripted.Options{})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	terminal := 0
	for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr("Write a note.")}) {
		if err != nil {
			t.Fatal(err)
		}
		if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Part.IsText() {
			text = *n.MessagePartUpdated.Part.Text
		}
		if _, ok := contract.EnvironmentEventTerminal(ev); ok {
			terminal++
		}
	}
	if text != "Done: Write a note." || terminal != 1 {
		t.Errorf("text %q, %d terminal events; want %q and 1", text, terminal, "Done: Write a note.")
	}
}

// QSK-02, QSK-10: the in-process worker's events reach the caller as they
// are; its rounds count per environment; a panic is the turn's error.
func TestInProcess(t *testing.T) {
	ctx := context.Background()
	var rounds []int
	p := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		rounds = append(rounds, pc.Round)
		if prompt == "panic" {
			panic("boom")
		}
		note := canonjson.ObjectValue([]canonjson.Member{{Name: "note", Value: canonjson.StringValue("Shipped " + prompt)}})
		return []contract.EnvironmentEvent{{Type: "result", Data: map[string]canonjson.Value{"result": note}}}, nil
	})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"restore.", "backup."} {
		var got []contract.EnvironmentEvent
		for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr(prompt)}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev)
		}
		if len(got) != 1 || got[0].Type != "result" {
			t.Fatalf("%s: got %+v", prompt, got)
		}
		note, _ := got[0].Data["result"].Get("note")
		if note.Str() != "Shipped "+prompt {
			t.Errorf("note %q", note.Str())
		}
		if kind, ok := contract.EnvironmentEventTerminal(got[0]); !ok || kind != contract.TerminalCompleted {
			t.Errorf("a result event is not a completed terminal: %v %v", kind, ok)
		}
	}
	for _, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr("panic")}) {
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("a panicking worker: err %v", err)
		}
	}
	if fmt.Sprint(rounds) != "[0 1 2]" {
		t.Errorf("rounds %v, want [0 1 2]", rounds)
	}
}

// OnTurn is told of each turn the provider starts, once: a turn re-sent
// under the turn id it was admitted with is replayed, not started again.
func TestOnTurnTellsEachStartOnce(t *testing.T) {
	ctx := context.Background()
	var started []scripted.TurnStarted
	p := scripted.New(hello(), scripted.Options{OnTurn: func(ts scripted.TurnStarted) { started = append(started, ts) }})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []*contract.TurnInput{
		{Prompt: ptr("one"), TurnID: ptr("turn-1")},
		{Prompt: ptr("one"), TurnID: ptr("turn-1")}, // replayed
		{Prompt: ptr("two")},
	} {
		for _, err := range env.Stream(ctx, in) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []scripted.TurnStarted{{EnvironmentID: env.ID(), TurnID: "turn-1", Prompt: "one"}, {EnvironmentID: env.ID(), Prompt: "two"}}
	if fmt.Sprint(started) != fmt.Sprint(want) || p.Turns() != 2 {
		t.Errorf("told %+v (%d turns); want %+v", started, p.Turns(), want)
	}
}
